/**
 * Kill -9 of a gateway, then of the history projector, under light HTTP load (issue 31), on one
 * real deployment on loopback (a leader core, a projector, two gateways, PostgreSQL, NATS:
 * test/support/cluster.ts), each kill followed by the check that everything acknowledged
 * survived (test/support/cluster-load.ts closingCheck: orders and transfers read back through
 * every gateway and from the command log, the ledger replayed from PostgreSQL sums to zero, every
 * balance agrees between the replay, every gateway, the leader and the history).
 *   - A gateway: its clients move to the other gateway and carry on; restarted on the same
 *     DATA_DIR it serves the same state (it keeps nothing of its own: it replays the log).
 *   - The projector: history reads on the gateways wait for it, with a deadline (503 with
 *     Retry-After after the history wait, not a hang); restarted, it catches up exactly once
 *     (the history's rows agree with the log: no duplicates, nothing missing).
 * Nothing restarts a killed process here but the test, as the supervisor would (docs/deploy.md
 * "Units"). Timing bounds are generous: the machine is shared.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { checkAfterKill, ExchangeLoad, loadedCluster } from '../support/cluster-load.ts';
import { Cluster, health } from '../support/cluster.ts';
import { call, waitFor, type Trader } from '../support/harness.ts';

const TRADERS = 4;
/** Each client's pause between requests: a light load. */
const PAUSE_MS = 20;
const ENV = { RATE_LIMIT_ACCOUNT: '1000000000' };

let cluster: Cluster;
let traders: Trader[];
let load: ExchangeLoad;

before(async () => {
  // No standby: these kills do not touch the core (kill-leader.test.ts and kill-servers.test.ts do).
  ({ cluster, traders, load } = await loadedCluster('kill-gateway-projector', { cores: 1, gateways: 2, env: ENV, together: true }, TRADERS));
});

after(async () => {
  await load?.stop();
  await cluster?.stop();
});

test('kill -9 of a gateway: its clients move to the other; restarted, it serves the same state', { timeout: 90_000 }, async () => {
  const [a, b] = cluster.gateways as [typeof cluster.gateways[0], typeof cluster.gateways[0]];
  load.start(TRADERS, PAUSE_MS);
  try {
    await waitFor(() => load.acks.length >= 40, 30_000, 20);
    await b.kill();
    load.gateways.splice(load.gateways.indexOf(b.url), 1);
    await load.carriesOn(20, 20_000);
    const restartMs = await b.start();
    load.gateways.push(b.url);
    console.log(`kill-gateway: restarted on its DATA_DIR and serving in ${restartMs} ms`);
    await load.carriesOn(10, 20_000);
    assert.ok(load.ackedSince(0, a.url) > 0);
  } finally {
    await load.stop();
  }
  await checkAfterKill('kill-gateway', cluster, load);
});

test('kill -9 of the projector: history reads answer 503 after their wait; restarted, it projects each seq once', { timeout: 90_000 }, async () => {
  const projector = cluster.projector!;
  const gateway = cluster.gateways[0]!.url;
  const trader = traders[0]!;
  load.start(TRADERS, PAUSE_MS);
  try {
    await waitFor(() => load.acks.length >= 40, 30_000, 20);
    await projector.kill();
    // Something acknowledged after the kill: the history cannot hold it until the projector is back.
    await load.carriesOn(10, 20_000);
    const asked = performance.now();
    const waited = await call(gateway, '/wallet/history', { token: trader.token });
    const waitedMs = performance.now() - asked;
    console.log(`kill-projector: a history read answered ${waited.status} after ${Math.round(waitedMs)} ms`);
    assert.equal(waited.status, 503, JSON.stringify(waited.body));
    assert.ok(Number(waited.headers.get('retry-after')) > 0, 'the 503 carries a Retry-After');
    assert.ok(waitedMs >= 4_000 && waitedMs < 15_000, `the read waited for the history, with a deadline (${Math.round(waitedMs)} ms)`);

    const restarted = performance.now();
    await projector.start();
    const leaderSeq = (await health((await cluster.awaitLeader(10_000)).core)).appliedSeq!;
    await waitFor(async () => ((await health(projector)).projectedSeq ?? 0) >= leaderSeq, 30_000, 50);
    console.log(`kill-projector: restarted and caught up with seq ${leaderSeq} in ${Math.round(performance.now() - restarted)} ms`);
    const served = await call(gateway, '/wallet/history', { token: trader.token });
    assert.equal(served.status, 200, JSON.stringify(served.body));
    await load.carriesOn(10, 20_000);
  } finally {
    await load.stop();
  }
  await checkAfterKill('kill-projector', cluster, load);
});
