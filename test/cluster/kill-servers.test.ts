/**
 * Kill -9 of the NATS server, then of the PostgreSQL server, under light HTTP load (issue 31), on
 * one real deployment on loopback (two cores, a projector, two gateways: test/support/cluster.ts),
 * each kill followed by the check that everything acknowledged survived
 * (test/support/cluster-load.ts closingCheck: orders and transfers read back through every
 * gateway and from the command log, a 503'd one decided there; the ledger replayed from
 * PostgreSQL sums to zero; every balance agrees between the replay, every gateway, the leader and
 * the history).
 *   - NATS: it keeps nothing the exchange needs. While it is down commands answer 503 with
 *     Retry-After within the bus deadline (~6 s); once it is back every process reconnects by
 *     itself and clients carry on.
 *   - PostgreSQL: the leader loses its lease connection and fails stop (so does a standby whose
 *     lease wait fails); once the server is back, the cores are started again and one leads;
 *     gateways and the projector reconnect by themselves.
 * A process that exits on a fatal error is restarted by the test alone, standing in for its
 * supervisor (systemd's Restart=always, docs/deploy.md "Units"); the test decides by the
 * processes' exits. Timing bounds are generous: the machine is shared.
 */
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, test } from 'node:test';
import { checkAfterKill, ExchangeLoad, loadedCluster } from '../support/cluster-load.ts';
import { Cluster, exited } from '../support/cluster.ts';
import { waitFor } from '../support/harness.ts';

const TRADERS = 4;
/** Each client's pause between requests: a light load. */
const PAUSE_MS = 20;
const ENV = { RATE_LIMIT_ACCOUNT: '1000000000' };
/** The gateway's bus deadline (adapters/nats/command-bus.ts DEFAULT_DEADLINE_MS) plus HTTP and a loaded machine. */
const ANSWER_BOUND_MS = 12_000;

let cluster: Cluster;
let load: ExchangeLoad;

before(async () => {
  ({ cluster, load } = await loadedCluster('kill-servers', { cores: 2, gateways: 2, env: ENV, together: true }, TRADERS));
});

after(async () => {
  await load?.stop();
  await cluster?.stop();
});

test('kill -9 of the NATS server: commands answer 503 with Retry-After within the bus deadline; after its restart all carries on', { timeout: 90_000 }, async () => {
  load.start(TRADERS, PAUSE_MS);
  try {
    await waitFor(() => load.acks.length >= 40, 30_000, 20);
    const before503 = load.unavailable.length;
    const killedAt = performance.now();
    await cluster.nats.kill();
    // Every client has had a command refused 503 while the server is away.
    await waitFor(() => load.unavailable.length >= before503 + TRADERS, 30_000, 20);
    const first503Ms = Math.min(...load.unavailable.slice(before503).map((u) => u.at)) - killedAt;
    await cluster.nats.restart();
    const outageMs = performance.now() - killedAt;
    const back = performance.now();
    await load.carriesOn(10, 30_000);
    const recoveryMs = performance.now() - back;
    console.log(`kill-nats: first 503 ${Math.round(first503Ms)} ms after the kill; server down ${Math.round(outageMs)} ms; `
      + `requests succeed on both gateways ${Math.round(recoveryMs)} ms after its restart`);
  } finally {
    await load.stop();
  }
  assert.ok(load.longestMs < ANSWER_BOUND_MS, `every request answered within the bus deadline (longest ${Math.round(load.longestMs)} ms)`);
  assert.ok(load.unavailable.length > 0);
  assert.equal(cluster.cores.filter(exited).length + cluster.gateways.filter(exited).length, 0, 'no process stopped for NATS');
  await checkAfterKill('kill-nats', cluster, load);
});

test('kill -9 of PostgreSQL: the leader fails stop; once the server is back a core leads again, gateways recover, nothing acknowledged is lost', { timeout: 120_000 }, async () => {
  const roles = [...cluster.cores, ...cluster.gateways, cluster.projector!];
  const names = new Map(roles.map((p, i) => [p, i < cluster.cores.length ? `core-${i}` : i < cluster.cores.length + cluster.gateways.length ? `gateway-${i - cluster.cores.length}` : 'projector']));
  const leader = (await cluster.awaitLeader(10_000)).core;
  load.start(TRADERS, PAUSE_MS);
  try {
    await waitFor(() => load.acks.length >= 40, 30_000, 20);
    const killedAt = performance.now();
    await cluster.postgres.kill();
    await waitFor(() => exited(leader), 20_000, 20);
    const failStopMs = performance.now() - killedAt;
    // Down a little longer, as a crashed server would be, then back on its folder (crash recovery).
    await sleep(1_000);
    await cluster.postgres.restart();
    const back = performance.now();
    const down = roles.filter(exited).map((p) => names.get(p));
    console.log(`kill-postgres: the leader failed stop ${Math.round(failStopMs)} ms after the kill; server back after ${Math.round(back - killedAt)} ms; exited: ${down.join(', ')}`);
    assert.ok(!cluster.gateways.some(exited), 'the gateways ride out a short outage');

    // The supervisor's part: start again what exited.
    await cluster.restartExitedCores();
    if (exited(cluster.projector!)) await cluster.projector!.start();
    const { core } = await cluster.awaitLeader(30_000);
    const leadsMs = performance.now() - back;
    await load.carriesOn(10, 60_000);
    console.log(`kill-postgres: ${names.get(core)} leads ${Math.round(leadsMs)} ms after the server came back; `
      + `clients carry on through both gateways ${Math.round(performance.now() - back)} ms after it`);
  } finally {
    await load.stop();
  }
  await checkAfterKill('kill-postgres', cluster, load);
});
