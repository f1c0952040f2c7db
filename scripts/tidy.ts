/**
 * House-style checks that the type checker and eslint do not make (research/aesthetics.md,
 * "make style executable"), run by `npm test`:
 *   - every source file opens with a `/** ... *\/` comment saying what it is;
 *   - no unfinished markers (TODO, FIXME, XXX) and no stubs anywhere in src, test, bench, scripts;
 *   - no `.only(` left in tests;
 *   - no console output from the pure core or pricing code.
 * Prints each violation as `file:line: rule` and exits 1 if there is any.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';

const ROOT = new URL('..', import.meta.url).pathname;
const DIRS = ['src', 'test', 'bench', 'scripts', 'sdk/src', 'web/src'];
const UNFINISHED = new RegExp(['TO' + 'DO', 'FIX' + 'ME', 'X' + 'XX', 'not ' + 'implemented'].join('|'), 'i');

function walk(dir: string, out: string[] = []): string[] {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) walk(path, out);
    else if (/\.(ts|tsx|mjs)$/.test(name)) out.push(path);
  }
  return out;
}

const problems: string[] = [];
const files = DIRS.flatMap((d) => {
  try {
    return walk(join(ROOT, d));
  } catch {
    return [];
  }
});

for (const file of files) {
  const rel = relative(ROOT, file);
  const text = readFileSync(file, 'utf8');
  const lines = text.split('\n');
  const firstCode = lines.findIndex((l) => l.trim() !== '' && !l.startsWith('#!'));
  if (/\.tsx?$/.test(rel) && !lines[firstCode]?.startsWith('/**') && !lines[firstCode]?.startsWith('//')) {
    problems.push(`${rel}:1: file must open with a doc comment saying what it is`);
  }
  lines.forEach((line, i) => {
    if (UNFINISHED.test(line) && !rel.endsWith('scripts/tidy.ts')) problems.push(`${rel}:${i + 1}: unfinished marker`);
    if (/\b(test|it|describe)\.only\(/.test(line)) problems.push(`${rel}:${i + 1}: .only left in a test`);
    if (/^src\/(core|pricing)\//.test(rel) && !rel.endsWith('.test.ts') && /console\.(log|error|warn)/.test(line)) {
      problems.push(`${rel}:${i + 1}: the pure core does not print`);
    }
  });
}

if (problems.length > 0) {
  for (const p of problems) console.error(p);
  console.error(`tidy: ${problems.length} problem(s)`);
  process.exit(1);
}
console.log(`tidy: ${files.length} files clean`);
