#!/usr/bin/env node
/**
 * Every test file under src/ and test/ (`npm run test:unit`), in two node --test runs side by
 * side: the files that spend minutes waiting on the wall clock while a service with the market
 * maker runs (SLOW_AND_IDLE: the option board's quality waits for the futures' basis averages to
 * converge) run beside all the others, which run one file at a time as before. That takes their
 * minutes off the suite's length; they use a fraction of a core meanwhile. The side run's output is
 * printed after the main run's, each with its own summary; the exit code is non-zero if either failed.
 *
 *   node scripts/test-unit.mjs            everything
 *   node scripts/test-unit.mjs FILE…      those files only, in one run
 */
import { spawn } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import process from 'node:process';

const SLOW_AND_IDLE = ['test/agents/option-board-quality.test.ts'];

function testFiles(dir) {
  const out = [];
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) out.push(...testFiles(path));
    else if (name.endsWith('.test.ts')) out.push(path);
  }
  return out;
}

/** Runs node --test over `files`; resolves with its exit code, its output streamed or collected. */
function run(files, stream) {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', '--test', '--test-reporter=spec', ...files], {
      stdio: ['ignore', stream ? 'inherit' : 'pipe', stream ? 'inherit' : 'pipe'],
    });
    let output = '';
    child.stdout?.on('data', (chunk) => (output += chunk));
    child.stderr?.on('data', (chunk) => (output += chunk));
    child.on('close', (code, signal) => resolve({ code: code ?? (signal === null ? 1 : 128), output }));
  });
}

const asked = process.argv.slice(2);
if (asked.length > 0) {
  process.exitCode = (await run(asked, true)).code;
} else {
  const all = [...testFiles('src'), ...testFiles('test')].sort();
  const missing = SLOW_AND_IDLE.filter((f) => !all.includes(f));
  if (missing.length > 0) throw new Error(`scripts/test-unit.mjs: ${missing.join(', ')} no longer exist; update SLOW_AND_IDLE`);
  const side = run(SLOW_AND_IDLE, false);
  const main = await run(all.filter((f) => !SLOW_AND_IDLE.includes(f)), true);
  const beside = await side;
  process.stdout.write(`\n# run beside the others: ${SLOW_AND_IDLE.join(', ')}\n${beside.output}`);
  process.exitCode = main.code !== 0 ? main.code : beside.code;
}
