/**
 * Reads never run ahead of the disk (gateway/durable-reads.ts), on the real service: while a
 * command's journal append is held back, a read of the state it changed waits for it; when the
 * append fails, the read answers 503 instead of showing what the restart then does not have.
 * Found by an audit: GET /perps/balances showed a transfer the journal never held.
 */
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { call, fund, signIn, startService } from '../support/harness.ts';

type Append = (batch: unknown[]) => Promise<void>;

/** Holds the service's next journal appends until `release` (or `fail`) is called. */
function holdAppends(svc: Awaited<ReturnType<typeof startService>>) {
  const writer = (svc.service.ctx.sequencer as unknown as { writer: { append: Append } }).writer;
  const append = writer.append.bind(writer);
  let open: () => void = () => undefined;
  let broken: Error | null = null;
  const gate = new Promise<void>((resolve) => (open = resolve));
  writer.append = async (batch) => {
    await gate;
    if (broken !== null) throw broken;
    return append(batch);
  };
  return {
    release: () => open(),
    fail: (error: Error) => {
      broken = error;
      open();
    },
  };
}

const settled = <T>(p: Promise<T>) => Promise.race([p.then(() => true), new Promise<boolean>((r) => setTimeout(() => r(false), 300))]);

test('a read waits for the commands it shows to be durable', async () => {
  const svc = await startService({}, mkdtempSync(join(os.tmpdir(), 'durable-reads-')));
  try {
    const t = await signIn(svc.url);
    await fund(svc.url, t, '1000', 15_000);
    const held = holdAppends(svc);
    const transfer = call(svc.url, '/wallet/transfer', { token: t.token, body: { from: 'wallet', to: 'perps', amount: '100' } });
    await new Promise((r) => setTimeout(r, 50));
    const reads = ['/perps/balances', '/wallet/balance', '/wallet/assets'].map((path) => call(svc.url, path, { token: t.token }));
    assert.equal(await settled(Promise.race(reads)), false, 'no read answered while the transfer was not durable');
    held.release();
    assert.equal((await transfer).status, 200);
    const [perps, wallet] = await Promise.all(reads);
    assert.equal(perps!.status, 200);
    assert.equal(perps!.body.balance, '100', 'shown once durable');
    assert.equal(wallet!.body.perpsBalance, '100');
  } finally {
    await svc.close();
  }
});

test('a read answers 503 when the commands it would show could not be written, and the restart agrees', async () => {
  const dir = mkdtempSync(join(os.tmpdir(), 'durable-reads-'));
  const svc = await startService({}, dir);
  const t = await signIn(svc.url);
  await fund(svc.url, t, '1000', 15_000);
  const quiet = console.error;
  console.error = () => undefined;
  let perps;
  try {
    const held = holdAppends(svc);
    const transfer = call(svc.url, '/wallet/transfer', { token: t.token, body: { from: 'wallet', to: 'perps', amount: '100' } });
    await new Promise((r) => setTimeout(r, 50));
    const read = call(svc.url, '/perps/balances', { token: t.token });
    held.fail(new Error('ENOSPC (injected)'));
    assert.equal((await transfer).status, 503);
    perps = await read;
  } finally {
    await svc.close().catch(() => undefined);
    console.error = quiet;
  }
  // Before: 200 with balance 100, a transfer the journal never held.
  assert.equal(perps.status, 503);
  assert.equal(perps.body.error, 'UNAVAILABLE');
  const again = await startService({}, dir);
  try {
    const after = await call(again.url, '/perps/balances', { token: t.token });
    assert.equal(after.body.balance, '0', 'the restart holds no trace of the transfer');
  } finally {
    await again.close();
  }
});
