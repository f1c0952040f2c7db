/**
 * The settings' documentation cannot drift from the code: every variable env.ts reads is listed
 * in .env.example and in the README's configuration table, neither lists one env.ts does not
 * read, and every value .env.example shows is the default (setting it changes nothing).
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { loadSettings } from './env.ts';

const ROOT = new URL('../../', import.meta.url);
const read = (path: string) => readFileSync(new URL(path, ROOT), 'utf8');

/** The names env.ts reads: `helper(env, 'NAME'` (a `secret(...)` also reads NAME_FILE), `env.NAME`, `env['NAME']`. */
function namesRead(): Set<string> {
  const source = read('src/config/env.ts');
  const names = new Set<string>();
  for (const [, helper, name] of source.matchAll(/\b([a-zA-Z]+)\(\s*env,\s*'([A-Z][A-Z0-9_]*)'/g)) {
    names.add(name!);
    if (helper === 'secret') names.add(`${name}_FILE`);
  }
  for (const [, name] of source.matchAll(/\benv(?:\.([A-Z][A-Z0-9_]*)|\['([A-Z][A-Z0-9_]*)'\])/g)) names.add(name!);
  return names;
}

/** `NAME=value` lines of .env.example, commented out or not. */
function exampleEntries(): Map<string, string> {
  const entries = new Map<string, string>();
  for (const line of read('.env.example').split('\n')) {
    const m = /^#? ?([A-Z][A-Z0-9_]*)=(.*)$/.exec(line);
    if (m !== null) entries.set(m[1]!, m[2]!);
  }
  return entries;
}

/** The variables named in the first column of README.md's "## Configuration" table. */
function readmeTable(): Set<string> {
  const readme = read('README.md');
  const start = readme.indexOf('\n## Configuration\n');
  assert.ok(start >= 0, 'README.md has a "## Configuration" section');
  const section = readme.slice(start + 1, readme.indexOf('\n## ', start + 1));
  const names = new Set<string>();
  for (const line of section.split('\n')) {
    const first = /^\| ([^|]+) \|/.exec(line)?.[1] ?? '';
    for (const [, name] of first.matchAll(/`([A-Z][A-Z0-9_]*)`/g)) names.add(name!);
  }
  return names;
}

test('the reader finds what env.ts reads (so the checks below are not vacuous)', () => {
  const names = namesRead();
  for (const name of ['PORT', 'HOST', 'PUBLIC_ORIGIN', 'ADMIN_TOKEN', 'JWT_SECRET', 'JWT_SECRET_FILE', 'MARKET_MAKER_KEY_FILE', 'LOG_LEVEL', 'MAX_CONNECTIONS_PER_IP']) {
    assert.ok(names.has(name), name);
  }
  assert.ok(names.size >= 45, `${names.size} names`);
});

test('every setting env.ts reads is in .env.example and in the README table, and nothing else is', () => {
  const names = [...namesRead()].sort();
  const example = [...exampleEntries().keys()].sort();
  const table = [...readmeTable()].sort();
  assert.deepEqual(names.filter((n) => !example.includes(n)), [], 'missing from .env.example');
  assert.deepEqual(example.filter((n) => !names.includes(n)), [], 'in .env.example but not read by env.ts');
  assert.deepEqual(names.filter((n) => !table.includes(n)), [], 'missing from the README configuration table');
  assert.deepEqual(table.filter((n) => !names.includes(n)), [], 'in the README configuration table but not read by env.ts');
});

test('every value .env.example shows is the default', () => {
  const defaults = loadSettings({});
  let shown = 0;
  for (const [name, value] of exampleEntries()) {
    if (value === '') continue; // no default (a secret, a token, a proxy list): unset
    shown++;
    assert.deepEqual(loadSettings({ [name]: value }), defaults, `${name}=${value} is not the default`);
  }
  assert.ok(shown >= 40, `${shown} values`);
});
