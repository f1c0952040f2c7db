/**
 * The running service's snapshots follow its journal (docs/architecture.md "Snapshots"): each one
 * asked for covers every command the history holds at that moment, the second one after more
 * commands covers those too (the worker's replica keeps following the journal), and the journal
 * records they cover leave the database for segments.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import Database from 'better-sqlite3';
import { join } from 'node:path';
import { call, fund, signIn, startService, waitFor } from '../support/harness.ts';

test('each snapshot covers the journal as it stands, and the records it covers are archived', { timeout: 60_000 }, async () => {
  const svc = await startService({ RATE_LIMIT_ACCOUNT: '1000000000' });
  try {
    const trader = await signIn(svc.url);
    await fund(svc.url, trader, '100');
    const transfers = async (n: number) => {
      for (let i = 0; i < n; i++) {
        const r = await call(svc.url, '/wallet/transfer', { token: trader.token, body: { from: 'wallet', to: 'perps', amount: '0.01' } });
        assert.equal(r.status, 200);
      }
      await svc.service.ctx.sequencer.historyBarrier();
    };
    for (const n of [30, 40]) {
      await transfers(n);
      const head = svc.service.ctx.sequencer.stats().journalHead;
      const report = await svc.service.snapshotter.snapshotNow();
      assert.ok(report.ok && report.written, JSON.stringify(report));
      assert.ok(report.seq >= head - 5 && report.seq <= svc.service.ctx.sequencer.stats().journalHead, `snapshot at ${report.seq}, journal at ${head}`);
    }
    const covered = svc.service.snapshotter.newestSeq;
    const db = new Database(join(svc.dataDir, 'exchange.sqlite'), { readonly: true });
    try {
      await waitFor(() => (db.prepare('SELECT MIN(seq) AS s FROM journal').get() as { s: number }).s >= covered, 10_000, 100);
    } finally {
      db.close();
    }
  } finally {
    await svc.close();
  }
});
