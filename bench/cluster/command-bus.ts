/**
 * What the command bus costs (src/adapters/nats/command-bus.ts): a small order sent by a gateway
 * to a core that answers at once (no log, no engine: the bus alone), over a real nats-server on
 * loopback, the gateway and the core in processes of their own as deployed.
 *
 * - the request's bytes and its encode + decode time, against JSON with the command in base64;
 * - round-trip latency one request at a time, p50 / p99 / p99.9;
 * - requests per second and latency with `--concurrency` requests in flight, and the CPU time
 *   each process spends per request (gateway, core, nats-server).
 *
 * Run: node --import tsx bench/cluster/command-bus.ts [--sequential 5000 --concurrency 64 --seconds 3]
 */
import { fork } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { NatsServer } from '../../test/support/nats.ts';
import { CommandBusClient, CommandBusServer } from '../../src/adapters/nats/command-bus.ts';
import { decodeRequest, encodeRequest } from '../../src/adapters/nats/command-wire.ts';
import { closeNats, connectNats } from '../../src/adapters/nats/connection.ts';
import { encode, decode } from '../../src/adapters/store/codec.ts';
import { decodeCommand, encodeCommand } from '../../src/adapters/store/command-codec.ts';
import { commandOfEachType, seededRandom } from '../../src/adapters/store/command-samples.ts';
import type { Command } from '../../src/core/commands.ts';

const { values: args } = parseArgs({
  options: {
    core: { type: 'string' },
    sequential: { type: 'string', default: '5000' },
    concurrency: { type: 'string', default: '64' },
    seconds: { type: 'string', default: '3' },
  },
});

/** A small limit order as the gateway builds it. */
function smallOrder(): Command {
  for (let seed = 0; ; seed++) {
    const order = commandOfEachType(seededRandom(seed)).find((c) => c.type === 'perp.place');
    if (order?.type === 'perp.place' && order.request.type === 'limit' && !('leverage' in order.request)) return order;
  }
}

/** The core's end: answers every command with the next seq, and reports its CPU time on request. */
async function runCore(url: string): Promise<void> {
  const nc = await connectNats(url, 'bench-core');
  let seq = 0;
  new CommandBusServer(nc).start(async () => ({ ok: true, seq: ++seq }));
  await nc.flush();
  process.on('message', (message) => {
    if (message === 'cpu') process.send!(process.cpuUsage());
    if (message === 'stop') void closeNats(nc).then(() => process.exit(0));
  });
  process.send!('ready');
}

const percentile = (sorted: readonly number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]!;
const ms = (v: number) => `${v.toFixed(3)} ms`;

/** Microseconds per call of `work`, best of 5 rounds of `n` calls. */
function perCall(n: number, work: () => unknown): number {
  let best = Infinity;
  for (let round = 0; round < 5; round++) {
    const started = performance.now();
    for (let i = 0; i < n; i++) work();
    best = Math.min(best, ((performance.now() - started) * 1000) / n);
  }
  return best;
}

function wireFigures(order: Command): void {
  const id = randomUUID();
  const binary = encodeRequest(id, order);
  const asJson = (c: Command) => JSON.stringify({ id, command: encodeCommand(c).toString('base64') });
  const json = asJson(order);
  const fromJson = (text: string) => {
    const parsed = JSON.parse(text) as { id: string; command: string };
    return { commandId: parsed.id, command: decodeCommand(Buffer.from(parsed.command, 'base64')) };
  };
  const plainJson = encode({ id, command: order });
  console.log(`request of a small order (${order.type}, a UUID command id):`);
  console.log(`  binary header + compact command  ${String(binary.length).padStart(4)} B   encode+decode ${perCall(20_000, () => decodeRequest(encodeRequest(id, order))).toFixed(2)} µs`);
  console.log(`  JSON, command compact in base64  ${String(Buffer.byteLength(json)).padStart(4)} B   encode+decode ${perCall(20_000, () => fromJson(asJson(order))).toFixed(2)} µs`);
  console.log(`  JSON, command as JSON            ${String(Buffer.byteLength(plainJson)).padStart(4)} B   encode+decode ${perCall(20_000, () => decode(encode({ id, command: order }))).toFixed(2)} µs`);
}

/** utime + stime of a process, in µs (/proc/<pid>/stat, clock ticks of 10 ms). */
function processCpuMicros(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10_000;
}

async function main(): Promise<void> {
  const order = smallOrder();
  console.log(`command bus: gateway and core in two processes over nats-server on loopback; node ${process.version}`);
  wireFigures(order);

  const nats = await NatsServer.start();
  const core = fork(process.argv[1]!, ['--core', nats.url], { execArgv: process.execArgv });
  await new Promise<void>((resolve) => core.once('message', () => resolve()));
  const coreCpu = () => new Promise<number>((resolve) => {
    core.once('message', (usage) => resolve((usage as NodeJS.CpuUsage).user + (usage as NodeJS.CpuUsage).system));
    core.send('cpu');
  });
  const nc = await connectNats(nats.url, 'bench-gateway');
  const client = new CommandBusClient(nc);
  const submit = async () => {
    const started = performance.now();
    const reply = await client.submit(randomUUID(), order);
    if (!reply.ok) throw new Error(`${reply.code}: ${reply.message}`);
    return performance.now() - started;
  };

  for (let i = 0; i < 1_000; i++) await submit(); // warm up both ends
  const sequential: number[] = [];
  for (let i = 0; i < Number(args.sequential); i++) sequential.push(await submit());
  sequential.sort((a, b) => a - b);
  console.log(`one at a time, ${sequential.length} requests: p50 ${ms(percentile(sequential, 0.5))}  p99 ${ms(percentile(sequential, 0.99))}  p99.9 ${ms(percentile(sequential, 0.999))}`);

  const concurrency = Number(args.concurrency);
  const until = performance.now() + Number(args.seconds) * 1000;
  const loaded: number[] = [];
  const cpu = { gateway: process.cpuUsage(), core: await coreCpu(), nats: processCpuMicros(nats.pid()!) };
  const started = performance.now();
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (performance.now() < until) loaded.push(await submit());
  }));
  const seconds = (performance.now() - started) / 1000;
  const gatewayUsage = process.cpuUsage(cpu.gateway);
  const perRequest = (micros: number) => `${(micros / loaded.length).toFixed(1)} µs`;
  loaded.sort((a, b) => a - b);
  console.log(`${concurrency} in flight for ${seconds.toFixed(1)} s: ${(loaded.length / seconds).toFixed(0)} requests/s, p50 ${ms(percentile(loaded, 0.5))}  p99 ${ms(percentile(loaded, 0.99))}`);
  console.log(`  CPU per request: gateway ${perRequest(gatewayUsage.user + gatewayUsage.system)}, core ${perRequest((await coreCpu()) - cpu.core)}, nats-server ${perRequest(processCpuMicros(nats.pid()!) - cpu.nats)}`);

  core.send('stop');
  await new Promise((resolve) => core.once('exit', resolve));
  await closeNats(nc);
  await nats.destroy();
}

if (args.core !== undefined) await runCore(args.core);
else await main();
