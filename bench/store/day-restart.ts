/**
 * Restart after a day of the default service (issue 26's target: ready within 5 s of process start
 * after one simulated day, and the same figure after ten minutes). The day is built at speed into a
 * real DATA_DIR, as the service writes it: the index from the simulated feed's own price model
 * (four sources per underlying, a second apart), a clock tick a second, and the reference market
 * maker's quotes (its config, its quoting functions and its re-quote rules, agents/requote.ts:
 * ladders anchored on marks and forwards, re-sent when they change or once a minute) on every
 * listed perp, future, spot pair and option, from the maker's own funded account, each second's
 * commands journaled as one batch with their history. Every SNAPSHOT_EVERY_MS of the day (or
 * SNAPSHOT_EVERY_COMMANDS commands) a snapshot is written and the journal it covers archived into
 * segments and trimmed, and the history's retention runs, as in the service (the snapshot is the
 * image of this core: a replay's state, which is what the snapshot worker would write). The day ends
 * just before the next snapshot would be written: the longest journal tail a restart replays. Then
 * the real service is started on the directory (`npm start`, the maker's key in its secrets so that
 * the same maker carries on) and bench/start/restart.ts times it to ready.
 *
 * Run: node --import tsx bench/store/day-restart.ts [--hours 24] [--keep] [--seed 7]
 *      (--hours 0.17: ten minutes). About 15 minutes of building for a day on this machine.
 * Figures: docs/performance.md ("Restart").
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, statSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { privateKeyToAccount } from 'viem/accounts';
import { ladder, optionQuote, priceString, type Level } from '../../src/agents/quoting.ts';
import { Anchors, SentQuotes, type WireLevel } from '../../src/agents/requote.ts';
import { AuthStore } from '../../src/adapters/store/auth-store.ts';
import { openDatabase } from '../../src/adapters/store/database.ts';
import { createPriceModel, DEFAULT_UNDERLYINGS } from '../../src/adapters/feed/price-model.ts';
import { archiveThrough, JournalSegments } from '../../src/adapters/store/journal-segments.ts';
import { Journal } from '../../src/adapters/store/journal.ts';
import type { CommittedCommand } from '../../src/runtime/journal-port.ts';
import { historyProjectors } from '../../src/adapters/store/projections/index.ts';
import { UnfilledOrderPruner } from '../../src/adapters/store/projections/retention.ts';
import { LAYOUT_FINGERPRINT, SnapshotStore, stateImage } from '../../src/adapters/store/snapshot-store.ts';
import { coreConfig, coreSettings } from '../../src/config/core.ts';
import { loadSettings } from '../../src/config/env.ts';
import { MARKET_MAKER_CONFIG as MM } from '../../src/config/market-maker.ts';
import { optionInstruments } from '../../src/core/clob/views.ts';
import type { Command } from '../../src/core/commands.ts';
import { Exchange } from '../../src/core/exchange.ts';
import { PLAIN_ORDER, type OrderRequest } from '../../src/core/linear/order.ts';
import { futureId } from '../../src/core/listings.ts';
import { fx, toFloat } from '../../src/core/money.ts';

const { values: args } = parseArgs({
  options: {
    hours: { type: 'string', default: '24' },
    keep: { type: 'boolean', default: false },
    seed: { type: 'string', default: '7' },
    restart: { type: 'boolean', default: true },
  },
});
const HOURS = Number(args.hours);
const YEAR = 365 * 86_400_000;
const MAKER_KEY = `0x${'5a'.repeat(32)}` as const;
const MAKER = privateKeyToAccount(MAKER_KEY).address.toLowerCase();

const dir = mkdtempSync(join(tmpdir(), 'day-restart-'));
const settings = loadSettings({ DATA_DIR: dir });
const dbPath = join(dir, 'exchange.sqlite');
const db = openDatabase(dbPath);
const projectors = historyProjectors(db);
const journal = new Journal(db, projectors);
new AuthStore(db).secret('market-maker-key', () => Buffer.from(MAKER_KEY.slice(2), 'hex'));
const config = coreConfig(coreSettings(settings));
const exchange = new Exchange(config);
const snapshots = new SnapshotStore(dir);
const segments = new JournalSegments(dir);
const pruner = new UnfilledOrderPruner(db, projectors[1], settings.history);
const feed = createPriceModel({ seed: Number(args.seed), underlyings: DEFAULT_UNDERLYINGS, tickMs: 1000 });
const anchors = new Anchors();
const sent = new SentQuotes();

const T0 = Date.now() - HOURS * 3_600_000 - 60_000;
let now = T0;
let batch: CommittedCommand[] = [];
const counts = new Map<string, number>();
let lastSnapshotSeq = 0;
let lastSnapshotAt = T0;

function apply(command: Command): void {
  const outcome = exchange.execute(command, now);
  if (!outcome.ok) return; // refused commands are answered, never journaled
  batch.push({ ts: exchange.now(), command, events: outcome.events });
  counts.set(command.type, (counts.get(command.type) ?? 0) + 1);
}

function flush(): void {
  if (batch.length === 0) return;
  journal.project(batch, journal.append(batch));
  batch = [];
}

function wire(levels: Level[], priceDecimals: number, sizeDecimals: number): WireLevel[] {
  const floor = (x: number) => Math.floor(x * 10 ** sizeDecimals + 1e-9) / 10 ** sizeDecimals;
  return levels
    .map((l) => ({ side: l.side, price: priceString(l.price, priceDecimals), quantity: priceString(floor(l.quantity), sizeDecimals), postOnly: true }))
    .filter((l) => fx(l.quantity) > 0n && fx(l.price) > 0n);
}

/** The order requests the bulk-quote route builds from wire levels. */
function requests(marketId: string, quotes: readonly WireLevel[]): OrderRequest[] {
  return quotes.map((q) => ({
    ...PLAIN_ORDER, marketId, side: q.side === 'buy' ? 0 : 1, type: 'limit', quantity: fx(q.quantity), price: fx(q.price),
    timeInForce: 'gtc', postOnly: true, reduceOnly: false, marginMode: 'cross', quoteId: 'mm',
  }));
}

function send(engine: 'perp' | 'clob', marketId: string, quotes: WireLevel[]): void {
  const quote = { marketId, quoteId: 'mm', cancelAll: true, replaceQuoteId: null, levels: requests(marketId, quotes) };
  apply(engine === 'perp' ? { type: 'perp.quote', account: MAKER, quote } : { type: 'clob.quote', account: MAKER, quote });
  sent.record(marketId, quotes, now);
}

function fund(): void {
  apply({ type: 'chain.deposit_observed', txHash: `0x${'d1'.repeat(32)}`, account: MAKER, amount: fx(MM.usdcDeposit), confirmations: settings.depositConfirmations });
  for (const to of ['perps', 'options', 'spot'] as const) apply({ type: 'wallet.transfer', account: MAKER, from: 'wallet', to, amount: fx(MM.buckets[to]) });
  for (const [asset, amount] of Object.entries(MM.spotInventory)) apply({ type: 'treasury.grant', account: MAKER, asset, amount: fx(amount) });
}

/** One cycle of the maker: every linear market, then every option, as agents/market-maker.ts does. */
function quoteAll(): void {
  for (const m of exchange.linear.markets.values()) {
    if (m.status !== 'open') continue;
    const mark = exchange.linear.markAt(m, now);
    const params = MM.perp[m.spec.underlying];
    if (mark === null || params === undefined) continue;
    const anchor = anchors.hold(m.spec.id, toFloat(mark), now, MM.moveBps, MM.linearRefreshMs);
    const quotes = wire(ladder(anchor.price, 0, params, toFloat(m.units.tick)), m.spec.priceDecimals, m.spec.sizeDecimals);
    if (sent.due(m.spec.id, quotes, now, MM.linearRefreshMs, m.units.tick, m.units.step) !== null) send('perp', m.spec.id, quotes);
  }
  for (const m of exchange.clob.markets.values()) {
    if (m.isOption || m.status !== 'open') continue;
    const index = exchange.indexPrice(m.underlying, now);
    const params = MM.spot[m.underlying];
    if (index === null || params === undefined) continue;
    const anchor = anchors.hold(m.spec.id, toFloat(index), now, MM.moveBps, MM.linearRefreshMs);
    const quotes = wire(ladder(anchor.price, 0, params, toFloat(m.units.tick)), m.spec.priceDecimals, m.spec.sizeDecimals);
    if (sent.due(m.spec.id, quotes, now, MM.linearRefreshMs, m.units.tick, m.units.step) !== null) send('clob', m.spec.id, quotes);
  }
  for (const i of optionInstruments(exchange.clob)) {
    const view = MM.vol[i.underlying];
    if (i.status !== 'open' || i.expiry <= now || view === undefined) continue;
    const future = exchange.linear.markets.get(futureId(i.underlying, i.expiry));
    const forward = (future === undefined ? null : exchange.linear.markAt(future, now)) ?? exchange.indexPrice(i.underlying, now);
    if (forward === null) continue;
    const anchor = anchors.hold(`${i.underlying}:${i.expiry}`, toFloat(forward), now, MM.optionMoveBps, MM.optionRefreshMs);
    const tick = toFloat(10n ** BigInt(18 - i.priceDecimals));
    const input = { forward: anchor.price, strike: toFloat(i.strike), T: (i.expiry - anchor.at) / YEAR, type: i.type, view, position: 0, tick };
    const quotes = wire(optionQuote(input, MM.option), i.priceDecimals, i.sizeDecimals);
    if (sent.due(i.id, quotes, now, MM.optionRefreshMs, fx(priceString(tick, i.priceDecimals)), i.minSize) !== null) send('clob', i.id, quotes);
  }
}

/** What the snapshot worker and the journal worker do, at the interval the service does it. */
function housekeeping(force = false): void {
  const head = journal.head();
  if (!force && head - lastSnapshotSeq < settings.snapshots.everyCommands && now - lastSnapshotAt < settings.snapshots.everyMs) return;
  const link = [...journal.replay(head)][0]!.chain;
  snapshots.files.write(head, exchange.now(), link, LAYOUT_FINGERPRINT, stateImage(exchange, () => new Exchange(config)), Date.now());
  snapshots.files.prune(settings.snapshots.keep);
  archiveThrough(journal, segments, head);
  while (journal.trimArchived(segments.archivedThrough(), 2048) > 0);
  while (pruner.pruneChunk(now) >= pruner.chunk);
  lastSnapshotSeq = head;
  lastSnapshotAt = now;
}

const started = performance.now();
apply({ type: 'clock.tick' });
fund();
flush();
const end = T0 + HOURS * 3_600_000;
let nextReport = T0 + 3_600_000;
while (now < end) {
  now += 1000;
  for (const { underlying, observations } of feed.step(now)) apply({ type: 'prices.observe', underlying, observations });
  apply({ type: 'clock.tick' });
  quoteAll();
  flush();
  housekeeping();
  if (now >= nextReport) {
    nextReport += 3_600_000;
    console.log(`hour ${Math.round((now - T0) / 3_600_000)}: journal seq ${journal.head()}, built in ${((performance.now() - started) / 1000).toFixed(0)} s`);
  }
}
// The worst restart: the service stopped just before its next snapshot, with the longest tail to replay.
while (now - lastSnapshotAt < settings.snapshots.everyMs - 1000 && journal.head() - lastSnapshotSeq < settings.snapshots.everyCommands - 100) {
  now += 1000;
  for (const { underlying, observations } of feed.step(now)) apply({ type: 'prices.observe', underlying, observations });
  apply({ type: 'clock.tick' });
  quoteAll();
  flush();
}
const buildSeconds = (performance.now() - started) / 1000;
db.close();

const size = (path: string): number => {
  const s = statSync(path);
  return s.isDirectory() ? readdirSync(path).reduce((n, f) => n + size(join(path, f)), 0) : s.size;
};
console.log(JSON.stringify({
  simulatedHours: HOURS,
  commands: journal.head(),
  tailAfterNewestSnapshot: journal.head() - lastSnapshotSeq,
  commandsPerSecond: +(journal.head() / (HOURS * 3600)).toFixed(1),
  byType: Object.fromEntries(counts),
  buildSeconds: Math.round(buildSeconds),
  dataDirBytes: size(dir),
  journalSegmentsBytes: size(join(dir, 'journal')),
  snapshotBytes: size(join(dir, 'snapshots')),
  exchangeSqliteBytes: size(dbPath),
}, null, 2));

if (args.restart) {
  // Built first, so that npm start's staleness check finds nothing to rebuild (a rebuild is not a restart's cost).
  execFileSync(process.execPath, [new URL('../../scripts/build.mjs', import.meta.url).pathname], { stdio: 'ignore' });
  for (let i = 0; i < 2; i++) {
    const out = execFileSync(process.execPath, ['--import', 'tsx', new URL('../start/restart.ts', import.meta.url).pathname, '--data-dir', dir, '--command', 'npm start'], { encoding: 'utf8' });
    console.log(out);
  }
}
if (!args.keep) rmSync(dir, { recursive: true, force: true });
else console.log(`kept ${dir}`);

