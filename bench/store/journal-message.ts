/**
 * What handing a committed command to the journal worker costs, in the two formats: the command
 * with its projected event objects (as before) and the flat array of journal-message.ts. The
 * sender's cost (pack, if any, plus the structured clone in postMessage) is paid on the event loop;
 * the receiver's (the clone read back, plus unpack) in the worker.
 *
 * The commands are filled IOC market orders from the core (the same as bench/store/journal-append.ts
 * and bench/gateway/orders.ts: two orders, a fill, three ledger lines each), sent in batches of 16
 * through a MessageChannel and read back with receiveMessageOnPort in the same thread, so both sides
 * are timed without a second thread competing for the CPU. Formats alternate, 5 rounds each; the
 * figures are the median per command.
 *
 * Run: node --import tsx bench/store/journal-message.ts [--commands 20000]
 */
import { MessageChannel, receiveMessageOnPort } from 'node:worker_threads';
import { parseArgs } from 'node:util';
import type { CommittedCommand } from '../../src/runtime/journal-port.ts';
import { packCommitted, unpackCommitted, type PackedCommand } from '../../src/adapters/store/journal-message.ts';
import { filledOrders, PROJECTED_TYPES as PROJECTED } from './filled-orders.ts';

const { values: args } = parseArgs({ options: { commands: { type: 'string', default: '20000' } } });
const COMMANDS = Number(args.commands);
const BATCH = 16;
const ROUNDS = 5;

interface Format {
  readonly name: string;
  send(c: CommittedCommand): unknown;
  receive(m: unknown): CommittedCommand;
}

const FORMATS: Format[] = [
  {
    name: 'event objects',
    send: (c) => ({ ts: c.ts, command: c.command, events: c.events.filter((e) => PROJECTED.has(e.type)) }),
    receive: (m) => m as CommittedCommand,
  },
  {
    name: 'flat (journal-message.ts)',
    send: (c) => packCommitted(c, PROJECTED),
    receive: (m) => unpackCommitted(m as PackedCommand),
  },
];

function round(format: Format, items: readonly CommittedCommand[]): { sendUs: number; receiveUs: number } {
  const { port1, port2 } = new MessageChannel();
  let sendNs = 0n;
  let receiveNs = 0n;
  let events = 0;
  for (let i = 0; i < items.length; i += BATCH) {
    const t0 = process.hrtime.bigint();
    port1.postMessage({ id: i, batch: items.slice(i, i + BATCH).map((c) => format.send(c)) });
    const t1 = process.hrtime.bigint();
    const received = receiveMessageOnPort(port2) as { message: { batch: unknown[] } };
    for (const m of received.message.batch) events += format.receive(m).events.length;
    receiveNs += process.hrtime.bigint() - t1;
    sendNs += t1 - t0;
  }
  port1.close();
  if (events === 0) throw new Error('no events crossed');
  return { sendUs: Number(sendNs) / 1000 / items.length, receiveUs: Number(receiveNs) / 1000 / items.length };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

const items = filledOrders(COMMANDS);
console.log(`journal message: ${COMMANDS} filled orders, batches of ${BATCH}, node ${process.version}`);
for (const f of FORMATS) round(f, items.slice(0, 2_000)); // warm-up
const results = new Map(FORMATS.map((f) => [f.name, { send: [] as number[], receive: [] as number[] }]));
for (let r = 0; r < ROUNDS; r++) {
  for (const f of FORMATS) {
    const { sendUs, receiveUs } = round(f, items);
    results.get(f.name)!.send.push(sendUs);
    results.get(f.name)!.receive.push(receiveUs);
  }
}
console.log('format                      send us/command (event loop)  receive us/command (worker)');
for (const [name, r] of results) {
  console.log(`${name.padEnd(26)}  ${median(r.send).toFixed(2).padStart(28)}  ${median(r.receive).toFixed(2).padStart(27)}`);
}
