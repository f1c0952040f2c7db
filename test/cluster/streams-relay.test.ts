/**
 * Streams across gateways (docs/deploy.md "Streams across gateways"): two gateways over one core,
 * a projector, real PostgreSQL and NATS, real SSE clients. One gateway holds the stream
 * producer's lease and runs the views for both, so a stream on either gateway carries the same
 * frames under the same eventIds and eventSeqs; when the producer is killed with SIGKILL, the
 * other gateway's streams end with a retryable UPSTREAM_UNAVAILABLE and open again on it, served
 * by its own producer. A client that asked to resume (resume=true) and reconnects to the other
 * gateway with its last eventSeq as Last-Event-ID gets the frames it missed, not a snapshot.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { Cluster } from '../support/cluster.ts';
import { call, waitFor } from '../support/harness.ts';
import { bearer, limit, perpTrader, StreamClient, type Message } from '../streams/support.ts';

let cluster: Cluster;
const clients: StreamClient[] = [];

before(async () => {
  cluster = await Cluster.start({ cores: 1, gateways: 2, together: true, env: { SSE_HEARTBEAT_MS: '200' } });
});

after(async () => {
  for (const c of clients) c.close();
  await cluster?.stop();
});

function open(url: string, headers: Record<string, string> = {}): StreamClient {
  const c = new StreamClient(url, headers);
  clients.push(c);
  return c;
}

const producer = () => cluster.streamProducer();

/** A bid price well inside the mark's band, once the mark is known. */
async function bidPrice(base: string): Promise<number> {
  await waitFor(async () => typeof (await call(base, '/perps/market-stats?marketId=BTC-PERP')).body?.markPrice === 'string', 20_000, 100);
  return Math.floor(Number((await call(base, '/perps/market-stats?marketId=BTC-PERP')).body.markPrice) * 0.8);
}

/** The frames of `c` after its snapshot, by eventSeq. */
const framesBySeq = (c: StreamClient): Map<number, Message> =>
  new Map(c.messages.filter((m) => m.event !== 'error').map((m) => [m.data.eventSeq as number, m]));

test('a stream carries the same frames, eventIds and eventSeqs on both gateways', { timeout: 120_000 }, async () => {
  const [a, b] = cluster.gateways.map((g) => g.url) as [string, string];
  await waitFor(async () => (await producer()) !== null, 20_000, 100);
  const trader = await perpTrader(a, '50000');
  const book = (base: string) => open(`${base}/perps/book-stream?marketId=BTC-PERP&intervalMs=50`);
  const balances = (base: string) => open(`${base}/portfolio/balances/stream`, bearer(trader));
  const [bookA, bookB, balA, balB] = [book(a), book(b), balances(a), balances(b)];
  for (const c of [bookA, bookB, balA, balB]) await c.next((m) => m.event === 'snapshot', 10_000);

  const low = await bidPrice(a);
  for (let i = 0; i < 5; i++) {
    await limit(i % 2 === 0 ? a : b, trader, 'buy', '0.01', String(low + 10 * i));
    await new Promise((resolve) => setTimeout(resolve, 80));
  }
  for (const c of [bookA, bookB]) await waitFor(() => c.of('update').length >= 3, 10_000, 20);
  await waitFor(() => balA.of('update').length >= 1 && balB.of('update').length >= 1, 10_000, 20);

  for (const [x, y] of [[bookA, bookB], [balA, balB]] as const) {
    const onA = framesBySeq(x);
    const onB = framesBySeq(y);
    const shared = [...onA.keys()].filter((seq) => onB.has(seq) && onA.get(seq)!.event !== 'snapshot' && onB.get(seq)!.event !== 'snapshot');
    assert.ok(shared.length >= 1, 'the two clients received frames of the same seqs');
    for (const seq of shared) assert.deepEqual(onB.get(seq)!.data, onA.get(seq)!.data, `frame ${seq} is the same on both gateways`);
    const group = (c: StreamClient) => String(c.messages[0]!.data.eventId).split('.').slice(0, 2).join('.');
    assert.equal(group(y), group(x), 'one group, made once, behind both gateways');
  }
});

test('a client resumes on the other gateway from its last eventSeq: the frames it missed, no snapshot', { timeout: 120_000 }, async () => {
  const [a, b] = cluster.gateways.map((g) => g.url) as [string, string];
  const trader = await perpTrader(b, '50000');
  const low = await bidPrice(a);
  const path = '/perps/book-stream?marketId=BTC-PERP&intervalMs=50&depth=50&resume=true';
  const watcher = open(`${a}${path}`); // keeps the group alive while the client moves
  await watcher.next((m) => m.event === 'snapshot', 10_000);
  const first = open(`${a}${path}`);
  await first.next((m) => m.event === 'snapshot', 10_000);
  await limit(a, trader, 'buy', '0.01', String(low));
  const seen = await first.next((m) => m.event === 'update', 10_000);
  first.close();
  const lastSeq = first.messages.at(-1)!.data.eventSeq as number;
  assert.ok(lastSeq >= seen.data.eventSeq);
  for (let i = 1; i <= 3; i++) { // missed while away, each in a frame of its own
    await limit(b, trader, 'buy', '0.01', String(low + 10 * i));
    await waitFor(() => watcher.messages.some((m) => m.data.eventSeq >= lastSeq + i), 10_000, 20);
  }

  const resumed = open(`${b}${path}`, { 'last-event-id': String(lastSeq) });
  await waitFor(() => resumed.messages.length >= 2, 10_000, 20);
  assert.equal(resumed.messages.some((m) => m.event === 'snapshot'), false, 'resumed on gateway B without a snapshot');
  const seqs = resumed.messages.map((m) => m.data.eventSeq as number);
  assert.deepEqual(seqs, seqs.map((_, i) => lastSeq + 1 + i), 'the next eventSeqs after the last one applied on gateway A');
  const got = [...resumed.messages];
  await waitFor(() => got.every((m) => framesBySeq(watcher).has(m.data.eventSeq)), 5_000, 20);
  const byWatcher = framesBySeq(watcher);
  for (const m of got) assert.deepEqual(m.data, byWatcher.get(m.data.eventSeq)!.data, 'the frames every member got');
});

test('kill -9 of the producing gateway: the other gateway\'s streams end retryable and open again there', { timeout: 120_000 }, async () => {
  await waitFor(async () => (await producer()) !== null, 20_000, 100);
  const killed = (await producer())!;
  const survivor = cluster.gateways.find((g) => g !== killed)!;
  const trader = await perpTrader(survivor.url, '50000');
  const stream = open(`${survivor.url}/perps/book-stream?marketId=BTC-PERP&intervalMs=50`);
  const first = await stream.next((m) => m.event === 'snapshot', 10_000);
  await killed.kill();
  const ended = await stream.next((m) => m.event === 'error', 10_000);
  assert.equal(ended.data.code, 'UPSTREAM_UNAVAILABLE');
  assert.equal(ended.data.retryable, true);
  await waitFor(async () => (await producer()) === survivor, 10_000, 100);
  // The EventSource reconnects by itself; the new snapshot comes from the survivor's own views.
  const again = await stream.next((m) => m.event === 'snapshot' && m !== first, 15_000);
  assert.notEqual(String(again.data.eventId).split('.')[0], String(first.data.eventId).split('.')[0], 'another producer\'s group');
  await limit(survivor.url, trader, 'buy', '0.02', String(await bidPrice(survivor.url)));
  await stream.next((m) => m.event === 'update' && m.data.eventSeq > again.data.eventSeq, 10_000);
  const health = await call(survivor.url, '/health');
  assert.equal(health.status, 200);
});
