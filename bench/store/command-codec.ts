/**
 * What a journal record costs on disk and to read back, by command type: the JSON an older build
 * stored (codec.ts) against the compact encoding (command-codec.ts). The commands are realistic, one
 * of each type per seed as their producers build them (src/adapters/store/command-samples.ts: the
 * gateway's orders, the market maker's option quotes and perp ladders, the feed's observations...).
 * Decoding is what a restart pays per replayed record; encoding is paid by the journal worker.
 * Each figure is the best of interleaved rounds (the machine is shared), per command.
 *
 * Run: node --import tsx bench/store/command-codec.ts [--seeds 200 --rounds 7]
 */
import { parseArgs } from 'node:util';
import { decode, encode } from '../../src/adapters/store/codec.ts';
import { decodeCommand, encodeCommand } from '../../src/adapters/store/command-codec.ts';
import { commandOfEachType, optionBulkQuote, perpQuoteLadder, seededRandom } from '../../src/adapters/store/command-samples.ts';
import type { Command } from '../../src/core/commands.ts';

const { values: args } = parseArgs({ options: { seeds: { type: 'string', default: '200' }, rounds: { type: 'string', default: '7' } } });
const SEEDS = Number(args.seeds);
const ROUNDS = Number(args.rounds);

const byType = new Map<string, Command[]>();
const add = (name: string, c: Command) => byType.set(name, [...(byType.get(name) ?? []), c]);
for (let seed = 0; seed < SEEDS; seed++) {
  for (const c of commandOfEachType(seededRandom(seed))) add(c.type, c);
  add('market maker option quote', optionBulkQuote(seededRandom(seed)));
  add('market maker perp ladder', perpQuoteLadder(seededRandom(seed)));
}

/** Microseconds per call of `work` over `items`, best of the rounds it is given. */
function perItem<T>(items: readonly T[], work: (item: T) => unknown): number {
  const repeat = Math.max(1, Math.ceil(20_000 / items.length));
  const started = process.hrtime.bigint();
  for (let r = 0; r < repeat; r++) for (const item of items) work(item);
  return Number(process.hrtime.bigint() - started) / 1000 / (repeat * items.length);
}

const pad = (s: string | number, n: number) => String(s).padStart(n);
console.log(`command codec: ${SEEDS} realistic commands per type, best of ${ROUNDS} rounds; node ${process.version}`);
console.log(`${'command'.padEnd(26)} ${pad('JSON B', 7)} ${pad('compact B', 9)} ${pad('%', 6)}   decode µs JSON → compact   encode µs JSON → compact`);
for (const [name, commands] of byType) {
  const texts = commands.map((c) => encode(c));
  const records = commands.map((c) => encodeCommand(c));
  const best = { jd: Infinity, cd: Infinity, je: Infinity, ce: Infinity };
  for (let round = 0; round < ROUNDS; round++) {
    best.jd = Math.min(best.jd, perItem(texts, (t) => decode(t)));
    best.cd = Math.min(best.cd, perItem(records, (r) => decodeCommand(r)));
    best.je = Math.min(best.je, perItem(commands, (c) => encode(c)));
    best.ce = Math.min(best.ce, perItem(commands, (c) => encodeCommand(c)));
  }
  const jsonBytes = texts.reduce((n, t) => n + Buffer.byteLength(t), 0) / commands.length;
  const compactBytes = records.reduce((n, r) => n + r.length, 0) / commands.length;
  console.log(
    `${name.padEnd(26)} ${pad(jsonBytes.toFixed(0), 7)} ${pad(compactBytes.toFixed(0), 9)} ${pad((100 * compactBytes / jsonBytes).toFixed(1), 6)}`
    + `   ${pad(best.jd.toFixed(2), 8)} → ${pad(best.cd.toFixed(2), 6)} (${pad((best.jd / best.cd).toFixed(1), 4)}×)`
    + `   ${pad(best.je.toFixed(2), 8)} → ${pad(best.ce.toFixed(2), 6)}`,
  );
}
