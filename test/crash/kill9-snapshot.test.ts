/**
 * Snapshots and journal segments under kill -9 (docs/architecture.md "Snapshots", "Segments and
 * retention"): the real service runs as a child process writing a snapshot (and archiving the
 * journal it covers) every few hundred commands while a trader moves money between its buckets with
 * transfers of unique amounts. The test watches the snapshot folder, or the segment folder, and
 * kills the process the moment a temporary file appears there, that is while a snapshot or a
 * segment is being written. The restart must recover from the last complete snapshot and the journal after it, and
 * every acknowledged transfer must be there exactly once; then, on a second restart with no kill
 * in a write, the process must start from a snapshot again (the partial file was never read).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { call, freePort, fund, signIn, waitFor, type Trader } from '../support/harness.ts';
import { ServiceProcess } from '../support/service-process.ts';

interface Line { amount: string; bucket: string; type: string }

/** A USDC amount of at most 6 decimals as its micro-USDC digits (the history trims trailing zeros). */
const micro = (amount: string): string => {
  const [whole, fraction = ''] = amount.split('.');
  return String(BigInt(whole!) * 1_000_000n + BigInt(fraction.padEnd(6, '0')));
};

/** The perps bucket's transfer lines, newest first, all pages. */
async function perpsTransfers(url: string, trader: Trader): Promise<string[]> {
  const out: string[] = [];
  let before = '';
  for (;;) {
    const page = await call<(Line & { id: number })[]>(url, `/wallet/history?limit=500${before}`, { token: trader.token });
    assert.equal(page.status, 200, JSON.stringify(page.body));
    for (const l of page.body) if (l.bucket === 'perps' && l.type === 'transfer') out.push(micro(l.amount));
    if (page.body.length < 500) return out;
    before = `&before=${page.body[page.body.length - 1]!.id}`;
  }
}

for (const [what, folder] of [['a snapshot', 'snapshots'], ['a journal segment', 'journal']] as const) {
  test(`kill -9 while ${what} is being written loses nothing acknowledged, and the partial file is never used`, { timeout: 180_000 }, () => killWhileWriting(folder));
}

async function killWhileWriting(folder: 'snapshots' | 'journal'): Promise<void> {
  const dataDir = mkdtempSync(join(tmpdir(), 'kill9-snapshot-'));
  const snapshots = join(dataDir, 'snapshots');
  const watched = join(dataDir, folder);
  const svc = new ServiceProcess(dataDir, await freePort(), {
    RATE_LIMIT_ACCOUNT: '1000000000',
    SNAPSHOT_EVERY_COMMANDS: '150',
    SNAPSHOT_EVERY_MS: '1000',
    LOG_LEVEL: 'info',
    // Each write holds 300 ms before its rename (adapters/store/failpoints.ts): the kill lands inside it.
    EXCHANGE_FAILPOINTS: 'snapshot.before-rename=300,segment.before-rename=300',
  });
  try {
    await svc.start();
    const trader = await signIn(svc.url);
    await fund(svc.url, trader, '1000', 15_000);
    const acknowledged: string[] = [];
    let n = 0;
    // Should a kill still land after the rename, try again (each attempt is a crash test all the same).
    let caught = false;
    for (let attempt = 0; attempt < 5 && !caught; attempt++) {
      if (attempt > 0) await svc.start();
      let killed = false;
      const transfer = async () => {
        while (!killed) {
          const amount = `0.${String(++n).padStart(6, '0')}`;
          const r = await call(svc.url, '/wallet/transfer', { token: trader.token, body: { from: 'wallet', to: 'perps', amount } }).catch(() => null);
          if (r?.status === 200) acknowledged.push(micro(amount));
        }
      };
      const watch = async () => {
        const deadline = Date.now() + 60_000;
        while (Date.now() < deadline) {
          if (existsSync(watched) && readdirSync(watched).some((f) => f.endsWith('.tmp'))) break;
          await new Promise((r) => setImmediate(r));
        }
        killed = true;
        await svc.kill();
      };
      await Promise.all([watch(), transfer(), transfer(), transfer()]);
      caught = readdirSync(watched).some((f) => f.endsWith('.tmp'));
      const complete = readdirSync(snapshots).filter((f) => f.endsWith('.snap'));

      await svc.start();
      const present = await perpsTransfers(svc.url, trader);
      const counts = new Map<string, number>();
      for (const a of present) counts.set(a, (counts.get(a) ?? 0) + 1);
      for (const a of acknowledged) assert.equal(counts.get(a), 1, `acknowledged transfer ${a} present once`);
      for (const [a, c] of counts) assert.equal(c, 1, `transfer ${a} applied once`);
      if (complete.length > 0) assert.match(svc.output(), /recovered from the snapshot at seq/);
      await svc.kill();
    }
    assert.ok(caught, `one of the kills landed while a file in ${folder}/ was being written`);

    // A later snapshot replaces the partial file, and the next restart starts from a snapshot.
    await svc.start();
    await waitFor(() => !readdirSync(watched).some((f) => f.endsWith('.tmp')), 30_000, 100);
    const present = await perpsTransfers(svc.url, trader);
    await svc.kill();
    await svc.start();
    assert.match(svc.output(), /recovered from the snapshot at seq/);
    const after = await perpsTransfers(svc.url, trader);
    assert.equal(after.length, present.length);
  } finally {
    await svc.kill();
    rmSync(dataDir, { recursive: true, force: true });
  }
}
