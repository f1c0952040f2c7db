/**
 * Regenerates (`--write`) or checks the state layout manifest, src/core/snapshot/state-layout.ts:
 * the fields of every state class, observed on a venue that exercises every kind of state
 * (test/support/rich-venue.ts). Run after changing the fields of a class the core keeps as state;
 * the new manifest retires snapshots written by the old code (docs/architecture.md "Snapshots").
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { RichVenue } from '../test/support/rich-venue.ts';
import { observeLayouts } from '../test/support/state-layouts.ts';

const PATH = new URL('../src/core/snapshot/state-layout.ts', import.meta.url);

export function manifestText(): string {
  const venue = new RichVenue(1).run(1_500);
  const { layouts, unseen, unregistered } = observeLayouts([venue.ex]);
  if (unregistered.length > 0) throw new Error(`classes in the state that are not registered in state-classes.ts: ${unregistered.join(', ')}`);
  if (unseen.length > 0) throw new Error(`registered state classes the rich venue never created: ${unseen.join(', ')}`);
  const head = readFileSync(PATH, 'utf8').split('export const')[0]!;
  const body = Object.keys(layouts).sort().map((name) => `  ${name}: ${JSON.stringify(layouts[name]).replace(/,/g, ', ')},`).join('\n');
  return `${head}export const STATE_LAYOUT: Readonly<Record<string, readonly string[]>> = {\n${body}\n};\n`;
}

if (process.argv[1] === new URL(import.meta.url).pathname) {
  const text = manifestText();
  if (process.argv.includes('--write')) {
    writeFileSync(PATH, text);
    console.log('state layout manifest written');
  } else if (text !== readFileSync(PATH, 'utf8')) {
    console.error('the state layout manifest is out of date: node --import tsx scripts/state-layout.ts --write');
    process.exit(1);
  } else console.log('state layout manifest up to date');
}
