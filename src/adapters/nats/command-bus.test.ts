/**
 * The command bus against a real nats-server (test/support/nats.ts): commands of every type and
 * rejections travel intact; a command sent while no leader is subscribed, or held by a leader that
 * died, reaches the next leader under the same command id; with no leader for longer than the
 * deadline, or with the NATS server killed (kill -9), a submission resolves UNAVAILABLE within the
 * deadline instead of hanging (at once on a closed connection), and both ends carry on once the
 * server is back; a slow commit answers every retry of its id from one handling; two cores in the
 * queue group handle each request once. Each test uses a subject of its own.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { NatsServer } from '../../../test/support/nats.ts';
import type { Command } from '../../core/commands.ts';
import { reject } from '../../core/errors.ts';
import { commandOfEachType, optionBulkQuote, perpQuoteLadder, seededRandom } from '../store/command-samples.ts';
import { CommandBusClient, CommandBusServer, type BusReply, type CommandBusClientOptions, type CommandHandler } from './command-bus.ts';
import { closeNats, connectNats, type NatsConnection } from './connection.ts';

let nats: NatsServer;
const connections: NatsConnection[] = [];
let subjects = 0;

before(async () => {
  nats = await NatsServer.start();
});

after(async () => {
  await Promise.all(connections.map((nc) => closeNats(nc, 500)));
  await nats.destroy();
});

async function connection(name: string): Promise<NatsConnection> {
  const nc = await connectNats(nats.url, name);
  connections.push(nc);
  return nc;
}

/** A fresh subject, so that one test's cores never answer another's requests. */
const freshSubject = () => `test.commands.${++subjects}`;

async function core(subject: string, handler: CommandHandler): Promise<{ server: CommandBusServer; nc: NatsConnection }> {
  const nc = await connection('core');
  const server = new CommandBusServer(nc, { subject });
  server.start(handler);
  await nc.flush(); // the subscription is registered before the test goes on
  return { server, nc };
}

async function gateway(subject: string, options: CommandBusClientOptions = {}): Promise<CommandBusClient> {
  return new CommandBusClient(await connection('gateway'), { subject, ...options });
}

/** A handler that records each delivery and answers the next seq. */
function recorder(): { handler: CommandHandler; seen: { commandId: string; command: Command }[] } {
  const seen: { commandId: string; command: Command }[] = [];
  return { seen, handler: async (commandId, command) => ({ ok: true, seq: seen.push({ commandId, command }) }) };
}

const ORDER: Command = commandOfEachType(seededRandom(7)).find((c) => c.type === 'perp.place')!;

test('commands of every type reach the core intact and the seq comes back', async () => {
  const subject = freshSubject();
  const { seen, handler } = recorder();
  await core(subject, handler);
  const client = await gateway(subject);
  const commands = [...commandOfEachType(seededRandom(1)), optionBulkQuote(seededRandom(2)), perpQuoteLadder(seededRandom(3))];
  const ids = commands.map(() => randomUUID());
  const replies = await Promise.all(commands.map((command, i) => client.submit(ids[i]!, command)));
  assert.equal(seen.length, commands.length);
  for (const [i, reply] of replies.entries()) {
    assert.ok(reply.ok);
    const delivered = seen[reply.seq - 1]!;
    assert.equal(delivered.commandId, ids[i]);
    assert.deepEqual(delivered.command, commands[i]);
  }
});

test("a rejection reaches the gateway with the core's code and message", async () => {
  const subject = freshSubject();
  await core(subject, async () => reject('INSUFFICIENT_MARGIN', 'initial margin 12.5 USDC exceeds available 3 USDC'));
  const reply = await (await gateway(subject)).submit(randomUUID(), ORDER);
  assert.deepEqual(reply, reject('INSUFFICIENT_MARGIN', 'initial margin 12.5 USDC exceeds available 3 USDC'));
});

test('a malformed request is answered with a rejection and the core carries on', async () => {
  const subject = freshSubject();
  const { handler } = recorder();
  await core(subject, handler);
  const raw = await connection('raw');
  for (const garbage of [new Uint8Array([]), new Uint8Array([9, 1, 65, 0]), new Uint8Array([1, 2, 65, 66, 0xff, 0x33])]) {
    const answer = JSON.parse((await raw.request(subject, garbage, { timeout: 2_000 })).string()) as { code: string; message: string };
    assert.equal(answer.code, 'INTERNAL');
    assert.match(answer.message, /malformed command request/);
  }
  assert.deepEqual(await (await gateway(subject)).submit(randomUUID(), ORDER), { ok: true, seq: 1 });
});

test('with no leader subscribed the gateway retries and the leader subscribing 1 s later gets it', async () => {
  const subject = freshSubject();
  const client = await gateway(subject);
  const id = randomUUID();
  const started = performance.now();
  const submitted = client.submit(id, ORDER);
  await sleep(1_000);
  const { seen, handler } = recorder();
  await core(subject, handler);
  assert.deepEqual(await submitted, { ok: true, seq: 1 });
  assert.ok(performance.now() - started < 1_600, 'answered soon after the leader subscribed');
  assert.deepEqual(seen.map((s) => s.commandId), [id]);
});

test('a command held by a leader that died reaches the next leader under the same command id', async () => {
  const subject = freshSubject();
  const deposed: string[] = [];
  const old = await core(subject, (commandId) => {
    deposed.push(commandId);
    return new Promise<BusReply>(() => undefined); // dies before answering
  });
  const client = await gateway(subject, { attemptTimeoutMs: 300 });
  const id = randomUUID();
  const submitted = client.submit(id, ORDER);
  await sleep(200);
  await old.nc.close(); // kill -9 of the leader, as NATS sees it: its subscription is gone
  await sleep(800);
  const { seen, handler } = recorder();
  await core(subject, handler);
  assert.deepEqual(await submitted, { ok: true, seq: 1 });
  assert.deepEqual(deposed, [id]);
  assert.deepEqual(seen.map((s) => s.commandId), [id]);
});

test('deliveries of an id still being handled share one handling', async () => {
  const subject = freshSubject();
  let calls = 0;
  await core(subject, async () => {
    calls++;
    await sleep(450);
    return { ok: true, seq: 42 };
  });
  const client = await gateway(subject, { attemptTimeoutMs: 100 });
  assert.deepEqual(await client.submit(randomUUID(), ORDER), { ok: true, seq: 42 });
  assert.equal(calls, 1);
});

test("a core's UNAVAILABLE (a fenced leader) is retried until a core takes the command", async () => {
  const subject = freshSubject();
  let calls = 0;
  await core(subject, async () => {
    if (++calls < 3) throw new Error('fenced: epoch 4 is no longer ours');
    return { ok: true, seq: 9 };
  });
  assert.deepEqual(await (await gateway(subject)).submit(randomUUID(), ORDER), { ok: true, seq: 9 });
  assert.equal(calls, 3);
});

test('with no leader for longer than the deadline the gateway answers UNAVAILABLE at the deadline', async () => {
  const client = await gateway(freshSubject());
  const started = performance.now();
  const reply = await client.submit(randomUUID(), ORDER, 1_000);
  const elapsed = performance.now() - started;
  assert.equal(reply.ok, false);
  assert.ok(!reply.ok && reply.code === 'UNAVAILABLE' && 'retryAfterSeconds' in reply && reply.retryAfterSeconds >= 1);
  assert.match(reply.message, /no leader core answered within 1000 ms/);
  assert.ok(elapsed >= 950 && elapsed < 1_500, `answered after ${elapsed.toFixed(0)} ms`);
});

test('on a closed connection a submission answers UNAVAILABLE at once', async () => {
  const nc = await connection('gateway');
  const client = new CommandBusClient(nc, { subject: freshSubject() });
  await nc.close();
  const started = performance.now();
  const reply = await client.submit(randomUUID(), ORDER);
  assert.ok(!reply.ok && reply.code === 'UNAVAILABLE');
  assert.match(reply.message, /connection to NATS is closed/);
  assert.ok(performance.now() - started < 100);
});

test('stop() answers the commands it took, then the core takes no more', async () => {
  const subject = freshSubject();
  const { server } = await core(subject, async () => {
    await sleep(300);
    return { ok: true, seq: 5 };
  });
  const client = await gateway(subject);
  const taken = client.submit(randomUUID(), ORDER);
  await sleep(100);
  await server.stop();
  assert.deepEqual(await taken, { ok: true, seq: 5 });
  const late = await client.submit(randomUUID(), ORDER, 400);
  assert.equal(late.ok === false && late.code, 'UNAVAILABLE');
});

test('two cores in the queue group handle each request exactly once', async () => {
  const subject = freshSubject();
  const first = recorder();
  const second = recorder();
  await core(subject, first.handler);
  await core(subject, second.handler);
  const client = await gateway(subject);
  const ids = Array.from({ length: 200 }, () => randomUUID());
  const replies = await Promise.all(ids.map((id) => client.submit(id, ORDER)));
  assert.ok(replies.every((r) => r.ok));
  const handled = [...first.seen, ...second.seen].map((s) => s.commandId);
  assert.equal(handled.length, ids.length);
  assert.deepEqual(new Set(handled), new Set(ids));
  assert.ok(first.seen.length > 0 && second.seen.length > 0, 'the queue group spreads the requests');
});

/** Sends 20 submissions to a core answering in 150 ms, and kills nats-server for `downMs` meanwhile. */
async function killDuringRequests(subject: string, deadlineMs: number, downMs: number) {
  await core(subject, async (commandId) => {
    await sleep(150);
    return { ok: true, seq: 1 + (commandId.charCodeAt(0) % 7) };
  });
  const client = await gateway(subject);
  const started = performance.now();
  const timed = Array.from({ length: 20 }, () => client.submit(randomUUID(), ORDER, deadlineMs).then((reply) => ({ reply, ms: performance.now() - started })));
  await sleep(50);
  await nats.kill();
  await sleep(downMs);
  await nats.restart();
  return { client, results: await Promise.all(timed) };
}

test('kill -9 of nats-server for longer than the deadline: every request in flight answers UNAVAILABLE in time', async () => {
  const subject = freshSubject();
  const { client, results } = await killDuringRequests(subject, 1_000, 1_400);
  for (const { reply, ms } of results) {
    assert.equal(reply.ok === false && reply.code, 'UNAVAILABLE');
    assert.ok(ms < 1_000 + 500, `answered after ${ms.toFixed(0)} ms`);
  }
  // Both ends reconnect by themselves: new commands go through.
  assert.deepEqual((await client.submit(randomUUID(), ORDER)).ok, true);
});

test('kill -9 of nats-server, back within the deadline: requests in flight go through after the restart', async () => {
  const subject = freshSubject();
  const { client, results } = await killDuringRequests(subject, 4_000, 500);
  for (const { reply, ms } of results) {
    assert.ok(reply.ok, `${JSON.stringify(reply)} after ${ms.toFixed(0)} ms`);
    assert.ok(ms < 4_000 + 500);
  }
  assert.deepEqual((await client.submit(randomUUID(), ORDER)).ok, true);
});
