/**
 * Start and readiness (docs/architecture.md "Start and readiness"): while the core recovers its
 * state, the service already answers: `GET /health` 503 with `status: "starting"` and the
 * recovery's progress, every other route 503 `UNAVAILABLE` with `Retry-After`; then it serves.
 * The journal is written beforehand as the service writes it (a few tens of thousands of cheap
 * commands, with their history), so that the replay takes long enough to be watched.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openDatabase } from '../../src/adapters/store/database.ts';
import { Journal } from '../../src/adapters/store/journal.ts';
import type { CommittedCommand } from '../../src/runtime/journal-port.ts';
import { historyProjectors } from '../../src/adapters/store/projections/index.ts';
import { coreConfig } from '../../src/config/core.ts';
import type { Command } from '../../src/core/commands.ts';
import { Exchange } from '../../src/core/exchange.ts';
import { fx } from '../../src/core/money.ts';
import { freePort } from '../support/harness.ts';
import { ServiceProcess } from '../support/service-process.ts';

const COMMANDS = 40_000;
const ACCOUNT = `0x${'a1'.repeat(20)}`;

/** A journal of one deposit and COMMANDS transfers back and forth, with its history. */
function writeJournal(dataDir: string): void {
  const db = openDatabase(join(dataDir, 'exchange.sqlite'));
  const journal = new Journal(db, historyProjectors(db));
  const exchange = new Exchange(coreConfig({ depositConfirmations: 2 }));
  let ts = Date.now() - 3_600_000;
  const commands: Command[] = [{ type: 'chain.deposit_observed', txHash: `0x${'11'.repeat(32)}`, account: ACCOUNT, amount: fx('1000'), confirmations: 2 }];
  for (let i = 0; i < COMMANDS; i++) {
    const [from, to] = i % 2 === 0 ? ['wallet', 'perps'] as const : ['perps', 'wallet'] as const;
    commands.push({ type: 'wallet.transfer', account: ACCOUNT, from, to, amount: fx('1') });
  }
  for (let at = 0; at < commands.length; at += 1000) {
    const batch: CommittedCommand[] = [];
    for (const command of commands.slice(at, at + 1000)) {
      const outcome = exchange.execute(command, ++ts);
      assert.ok(outcome.ok);
      batch.push({ ts, command, events: outcome.events });
    }
    journal.project(batch, journal.append(batch));
  }
  db.close();
}

test('while recovering, /health says starting with progress and other routes answer 503 with Retry-After', { timeout: 120_000 }, async () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'startup-'));
  const svc = new ServiceProcess(dataDir, await freePort());
  try {
    writeJournal(dataDir);
    const started = svc.start();
    const seen: { health: number; status?: string; replayed?: number; toReplay?: number }[] = [];
    let refused: Response | null = null;
    let refusedBody: { error?: string; message?: string } = {};
    for (const deadline = Date.now() + 60_000; Date.now() < deadline;) {
      const health = await fetch(`${svc.url}/health`).catch(() => null);
      if (health === null) {
        await new Promise((r) => setTimeout(r, 5));
        continue;
      }
      const body = await health.json() as { status: string; startup?: { replayed: number; toReplay: number } };
      seen.push({ health: health.status, status: body.status, replayed: body.startup?.replayed, toReplay: body.startup?.toReplay });
      if (health.status === 200) break;
      if (refused === null) {
        refused = await fetch(`${svc.url}/perps/markets`);
        refusedBody = await refused.json() as typeof refusedBody;
      }
      await new Promise((r) => setTimeout(r, 5));
    }
    await started;
    const starting = seen.filter((s) => s.status === 'starting');
    assert.ok(starting.length >= 2, `saw the start: ${JSON.stringify(seen.slice(0, 5))}`);
    assert.ok(starting.every((s) => s.health === 503));
    assert.ok(starting.some((s) => s.toReplay === COMMANDS + 1 && s.replayed! > 0 && s.replayed! < COMMANDS + 1), 'progress reported part way');
    assert.equal(seen.at(-1)?.health, 200);
    assert.equal(refused?.status, 503);
    assert.equal(refused?.headers.get('retry-after'), '1');
    assert.equal(refusedBody.error, 'UNAVAILABLE');
    assert.match(refusedBody.message ?? '', /the exchange is starting/);
  } finally {
    await svc.kill();
    rmSync(dataDir, { recursive: true, force: true });
  }
});
