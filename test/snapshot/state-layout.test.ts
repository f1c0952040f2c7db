/**
 * The state layout manifest (src/core/snapshot/state-layout.ts) matches the code: every state class
 * the rich venue creates is registered, and its fields are those the manifest lists. A failure here
 * means a state class changed: regenerate the manifest (`node --import tsx scripts/state-layout.ts
 * --write`), which retires the snapshots older code wrote (docs/architecture.md "Snapshots").
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { manifestText } from '../../scripts/state-layout.ts';

test('the state layout manifest matches the state classes', () => {
  const current = readFileSync(new URL('../../src/core/snapshot/state-layout.ts', import.meta.url), 'utf8');
  assert.equal(manifestText(), current, 'a state class changed: node --import tsx scripts/state-layout.ts --write');
});
