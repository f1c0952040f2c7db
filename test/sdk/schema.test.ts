/**
 * The SDK's committed types (sdk/src/schema.ts) are what openapi-typescript makes of the document
 * the real service serves at /openapi.json (the test service runs with ADMIN_TOKEN, so /admin/* is
 * in it): a route or schema changed without `npm run sdk:generate` fails here, naming the first
 * line that differs. Also checks that the generated types cover every served path and all six
 * streams are typed as Server-Sent Events.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { renderSchema, SCHEMA_PATH } from '../../scripts/sdk-schema.ts';
import { call, startService, type TestService } from '../support/harness.ts';

let svc: TestService;
let doc: { paths: Record<string, Record<string, { responses?: Record<string, { content?: Record<string, unknown> }> }>> };

before(async () => {
  svc = await startService();
  const reply = await call(svc.url, '/openapi.json');
  assert.equal(reply.status, 200);
  doc = reply.body;
});

after(async () => {
  await svc.close();
});

test('sdk/src/schema.ts is generated from the served OpenAPI document (npm run sdk:generate)', async () => {
  const expected = await renderSchema(doc);
  const committed = readFileSync(SCHEMA_PATH, 'utf8');
  if (committed !== expected) {
    const a = committed.split('\n');
    const b = expected.split('\n');
    const i = a.findIndex((line, n) => line !== b[n]);
    const at = i < 0 ? Math.min(a.length, b.length) : i;
    assert.fail(
      `sdk/src/schema.ts is stale: run \`npm run sdk:generate\`. First difference at line ${at + 1}:\n` +
        `  committed: ${a[at] ?? '(end of file)'}\n  served:    ${b[at] ?? '(end of file)'}`,
    );
  }
});

test('every served path is in the types, and the event streams are typed as text/event-stream', () => {
  const committed = readFileSync(SCHEMA_PATH, 'utf8');
  for (const path of Object.keys(doc.paths)) assert.ok(committed.includes(`    ${JSON.stringify(path)}: {`), `${path} typed`);
  const streams = Object.entries(doc.paths)
    .filter(([, ops]) => ops.get?.responses?.['200']?.content?.['text/event-stream'] !== undefined)
    .map(([path]) => path);
  for (const s of [
    '/perps/book-stream', '/perps/stream/events', '/perps/stream/user', '/portfolio/balances/stream',
    '/markets/board/stream', '/options/stream/events',
  ]) assert.ok(streams.includes(s), `${s} is an event stream`);
});
