/**
 * Reads never run ahead of the disk (gateway/durable-reads.ts), on the real service: while a
 * command's journal append is held back, a read of the state it changed waits for it; when the
 * append fails, the read answers 503 instead of showing what the restart then does not have.
 * Found by an audit: GET /perps/balances showed a transfer the journal never held.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { call, fund, holdJournal, signIn, startService } from '../support/harness.ts';

const settled = <T>(p: Promise<T>) => Promise.race([p.then(() => true), new Promise<boolean>((r) => setTimeout(() => r(false), 300))]);

test('a read waits for the commands it shows to be durable', async () => {
  const svc = await startService();
  try {
    const t = await signIn(svc.url);
    await fund(svc.url, t, '1000', 15_000);
    const held = holdJournal(svc);
    const transfer = call(svc.url, '/wallet/transfer', { token: t.token, body: { from: 'wallet', to: 'perps', amount: '100' } });
    await new Promise((r) => setTimeout(r, 50));
    const reads = ['/perps/balances', '/wallet/balance', '/wallet/assets'].map((path) => call(svc.url, path, { token: t.token }));
    assert.equal(await settled(Promise.race(reads)), false, 'no read answered while the transfer was not durable');
    held.releaseAll();
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
    const held = holdJournal(svc);
    const transfer = call(svc.url, '/wallet/transfer', { token: t.token, body: { from: 'wallet', to: 'perps', amount: '100' } });
    await new Promise((r) => setTimeout(r, 50));
    const read = call(svc.url, '/perps/balances', { token: t.token });
    held.fail(new Error('ENOSPC (injected)'));
    const refused = await transfer;
    assert.equal(refused.status, 503);
    assert.equal(refused.headers.get('retry-after'), '1', 'a 503 says when to retry');
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
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a history read does not wait for batches still being written: it shows only what was acknowledged', async () => {
  const svc = await startService();
  const held = holdJournal(svc, 'wallet.transfer');
  try {
    const t = await signIn(svc.url);
    await fund(svc.url, t, '1000', 15_000);
    const transfer = call(svc.url, '/wallet/transfer', { token: t.token, body: { from: 'wallet', to: 'perps', amount: '100' } });
    await new Promise((r) => setTimeout(r, 50));
    assert.equal(held.held(), 1);
    const historyPaths = ['/wallet/history', '/wallet/settlements', '/perps/orders', '/perps/trades', '/orders/me', '/options/trades/me'];
    const history = historyPaths.map((path) => call(svc.url, path, { token: t.token }));
    // Before: each waited for the held transfer (the live-state barrier) though it cannot show it.
    assert.equal(await settled(Promise.all(history)), true, 'the history reads answered while the transfer was held');
    const [ledger] = await Promise.all(history);
    assert.equal(ledger!.status, 200);
    assert.ok(!ledger!.body.some((e: { bucket: string }) => e.bucket === 'perps'), 'the held transfer is not in the history');
    const live = call(svc.url, '/perps/balances', { token: t.token });
    assert.equal(await settled(live), false, 'a read of the live core still waits');
    held.releaseAll();
    assert.equal((await transfer).status, 200);
    assert.equal((await live).body.balance, '100');
    const after = await call(svc.url, '/wallet/history', { token: t.token });
    assert.ok(after.body.some((e: { bucket: string }) => e.bucket === 'perps'));
  } finally {
    held.releaseAll();
    await svc.close();
  }
});
