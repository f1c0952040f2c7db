/** Wire formatting: the cached ISO time is always the text of the time asked for. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { iso, isoOrNull } from './format.ts';

test('iso gives toISOString of each time, repeated or alternating', () => {
  const times = [0, 0, 1_795_348_800_123, 1_795_348_800_123, 1, 0, 1_795_348_800_124, -1, 8.64e15];
  for (const ms of times) assert.equal(iso(ms), new Date(ms).toISOString());
  assert.equal(isoOrNull(null), null);
  assert.equal(isoOrNull(undefined), null);
  assert.equal(isoOrNull(5), '1970-01-01T00:00:00.005Z');
  assert.throws(() => iso(Number.NaN), RangeError);
});
