/**
 * Side-by-side benchmark of order books on the shared workload (bench/shared/workload.mjs): runs
 * several adapters (bench/engine/adapters/*) in one process and one invocation, following
 * /work/shared/bench/nob-driver.mjs step by step: same options and workload, ops converted to call
 * arguments before any timing, a timed loop of only the engine calls on a fresh prefilled book,
 * warm-up, median of clean runs, GC accounting, the shared-machine guard (runs during which other
 * processes used more than --foreign-max % of a core are redone), the end-state check against the
 * generator's shadow book, retained book memory and an optional per-op latency pass. Runs of the
 * adapters are interleaved (nob, book, nob, book, ...) so machine noise hits all of them alike.
 *
 * Run: node --expose-gc --import tsx bench/engine/book-bench.ts
 *   options: --n 1000000 --seed 42 --runs 5 --warmup 1 --target 5000 --json out.json --latency
 *            --adapters nob,book --foreign-max 15 --max-attempts 15
 * Not a test: it exits 1 when an adapter's end state does not match the workload stats.
 */

import { PerformanceObserver, constants as perfConstants } from 'node:perf_hooks';
import { writeFileSync, readFileSync, existsSync } from 'node:fs';
import os from 'node:os';
import type { Adapter, EndState, WorkloadOp } from './adapters/adapter.ts';
import { nobAdapter } from './adapters/nob.ts';
import { bookAdapter } from './adapters/book.ts';
import { fullAdapter } from './adapters/full.ts';
import { clobAdapter } from './adapters/clob.ts';

interface WorkloadStats extends EndState { trades: number; tradedQty: number; maxResting: number }
interface WorkloadModule {
  buildWorkload(o: object): {
    prefill: WorkloadOp[]; ops: WorkloadOp[]; stats: WorkloadStats; options: { targetResting: number };
  };
  summarize(ops: WorkloadOp[]): Record<WorkloadOp['type'], number>;
}
// workload.mjs is a verbatim copy of the shared plain-JS generator (no typings): load it typed here.
const workloadUrl = new URL('../shared/workload.mjs', import.meta.url).href;
const { buildWorkload, summarize } = (await import(workloadUrl)) as WorkloadModule;

// ---------- options (same names and defaults as nob-driver.mjs) ----------
const args = process.argv.slice(2);
function opt(name: string, dflt: number): number;
function opt(name: string, dflt: string): string;
function opt(name: string, dflt: number | string): number | string {
  const i = args.indexOf(`--${name}`);
  if (i < 0) return dflt;
  const v = args[i + 1] ?? '';
  return typeof dflt === 'number' ? Number(v) : v;
}
const N = opt('n', 1_000_000);
const SEED = opt('seed', 42);
const RUNS = opt('runs', 5);
const WARMUP = opt('warmup', 1);
const JSON_OUT = opt('json', '');
const TARGET = opt('target', 5_000);
const LATENCY = args.includes('--latency');
const FOREIGN_MAX = opt('foreign-max', 15);
const MAX_ATTEMPTS = opt('max-attempts', RUNS * 3);
const ALL_ADAPTERS: Adapter<unknown, unknown>[] = [nobAdapter, bookAdapter, fullAdapter, clobAdapter];
const wanted = opt('adapters', ALL_ADAPTERS.map((a) => a.name).join(',')).split(',');
const ADAPTERS = ALL_ADAPTERS.filter((a) => wanted.includes(a.name));
if (ADAPTERS.length === 0) throw new Error(`no adapter among ${wanted.join(',')}`);

const gcAvailable = typeof globalThis.gc === 'function';
const fullGc = (): void => { if (globalThis.gc) { globalThis.gc(); globalThis.gc(); } };
const mb = (b: number): number => +(b / 1048576).toFixed(1);

// ---------- GC accounting during timed runs ----------
let gcMs = 0, gcCount = 0, gcMajorMs = 0;
const obs = new PerformanceObserver((list) => {
  for (const e of list.getEntries()) {
    gcMs += e.duration;
    gcCount++;
    if ((e as { detail?: { kind?: number } }).detail?.kind === perfConstants.NODE_PERFORMANCE_GC_MAJOR) {
      gcMajorMs += e.duration;
    }
  }
});
obs.observe({ entryTypes: ['gc'] });
// GC entries reach the observer asynchronously: let them arrive before and after the timed loop
const flushObserver = (): Promise<void> => new Promise((resolve) => setTimeout(resolve, 20));

// whole-machine busy CPU seconds from /proc/stat (null where unavailable)
const HAS_PROC = existsSync('/proc/stat');
function machineBusySecs(): number | null {
  if (!HAS_PROC) return null;
  const line = readFileSync('/proc/stat', 'utf8').split('\n')[0] ?? '';
  const f = line.trim().split(/\s+/).slice(1).map(Number) as number[];
  // user nice system idle iowait irq softirq steal; USER_HZ is 100 on Linux
  return ((f[0] ?? 0) + (f[1] ?? 0) + (f[2] ?? 0) + (f[5] ?? 0) + (f[6] ?? 0) + (f[7] ?? 0)) / 100;
}

// ---------- workload, generated and converted before any timing ----------
const tGen = performance.now();
const { prefill, ops, stats, options } =
  buildWorkload({ n: N, seed: SEED, targetResting: TARGET, prefill: TARGET });
const genMs = performance.now() - tGen;
const mix = summarize(ops);
interface Prepared { ad: Adapter<unknown, unknown>; P: unknown; M: unknown }
const PREPARED: Prepared[] = ADAPTERS.map((ad) => ({ ad, P: ad.prepare(prefill), M: ad.prepare(ops) }));

interface RunResult {
  book: unknown; secs: number; opsPerSec: number; misses: number; heapBefore: number; heapAfterNoGc: number;
  gc: { ms: number; count: number; majorMs: number }; foreignPct: number | null;
}

async function oneRun({ ad, P, M }: Prepared): Promise<RunResult> {
  const book = ad.newBook();
  ad.replay(book, P);
  fullGc();
  await flushObserver();
  const heapBefore = process.memoryUsage().heapUsed;
  gcMs = 0; gcCount = 0; gcMajorMs = 0;
  const busy0 = machineBusySecs();
  const cpu0 = process.cpuUsage();
  const t0 = process.hrtime.bigint();
  const misses = ad.replay(book, M);
  const t1 = process.hrtime.bigint();
  const secs = Number(t1 - t0) / 1e9;
  const cpu1 = process.cpuUsage(cpu0);
  const busy1 = machineBusySecs();
  const ownSecs = (cpu1.user + cpu1.system) / 1e6;
  const foreignPct = busy0 === null || busy1 === null ? null
    : Math.max(0, Math.round(((busy1 - busy0 - ownSecs) / secs) * 100));
  const heapAfterNoGc = process.memoryUsage().heapUsed;
  await flushObserver();
  const gc = { ms: +gcMs.toFixed(1), count: gcCount, majorMs: +gcMajorMs.toFixed(1) };
  return { book, secs, opsPerSec: ops.length / secs, misses, heapBefore, heapAfterNoGc, gc, foreignPct };
}

function stateOk(end: EndState, misses: number): boolean {
  return misses === 0 && end.restingOrders === stats.restingOrders && end.bidQty === stats.bidQty &&
    end.askQty === stats.askQty && end.bestBid === stats.bestBid && end.bestAsk === stats.bestAsk &&
    (end.fills === undefined || end.fills === stats.trades) &&
    (end.filledLots === undefined || end.filledLots === stats.tradedQty);
}

function percentile(sorted: Float64Array, p: number): number {
  if (sorted.length === 0) return 0;
  const idx = Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1);
  return sorted[Math.max(0, idx)] as number;
}

function pcts(arr: Float64Array): Record<string, number> {
  arr.sort();
  return {
    count: arr.length,
    p50us: +(percentile(arr, 50) / 1000).toFixed(2),
    p90us: +(percentile(arr, 90) / 1000).toFixed(2),
    p99us: +(percentile(arr, 99) / 1000).toFixed(2),
    p999us: +(percentile(arr, 99.9) / 1000).toFixed(2),
    p9999us: +(percentile(arr, 99.99) / 1000).toFixed(2),
    maxUs: +((arr[arr.length - 1] ?? 0) / 1000).toFixed(1),
  };
}

const OP_NAMES = ['limit', 'ioc', 'market', 'cancel'] as const;

function latencyRun({ ad, P, M }: Prepared): Record<string, unknown> {
  const book = ad.newBook();
  ad.replay(book, P);
  fullGc();
  const n = ops.length;
  const d = new Float64Array(n);
  const busy0 = machineBusySecs();
  const cpu0 = process.cpuUsage();
  const w0 = performance.now();
  for (let i = 0; i < n; i++) {
    const t0 = process.hrtime.bigint();
    ad.apply(book, M, i);
    d[i] = Number(process.hrtime.bigint() - t0);
  }
  const wallSecs = (performance.now() - w0) / 1000;
  const cpu1 = process.cpuUsage(cpu0);
  const busy1 = machineBusySecs();
  const foreignCpuPct = busy0 === null || busy1 === null ? null
    : Math.max(0, Math.round(((busy1 - busy0 - (cpu1.user + cpu1.system) / 1e6) / wallSecs) * 100));
  // timer overhead: two back-to-back reads
  const ov = new Float64Array(200_000);
  for (let i = 0; i < ov.length; i++) {
    const a = process.hrtime.bigint();
    ov[i] = Number(process.hrtime.bigint() - a);
  }
  ov.sort();
  const out: Record<string, unknown> = { timerOverheadNsP50: percentile(ov, 50), foreignCpuPct };
  out.all = pcts(Float64Array.from(d));
  for (const name of OP_NAMES) {
    const sel: number[] = [];
    for (let i = 0; i < n; i++) if ((ops[i] as WorkloadOp).type === name) sel.push(d[i] as number);
    out[name] = pcts(Float64Array.from(sel));
  }
  return out;
}

interface Row {
  run: number; opsPerSec: number; secs: number; nsPerOp: number; gc: RunResult['gc'];
  heapGrowthDuringRunMB: number; stateMatchesShadowBook: boolean; foreignCpuPct: number | null;
}
interface Tally {
  prepared: Prepared; results: Row[]; rejected: Row[]; attempts: number; allOk: boolean;
  lastRun: { ok: boolean; cancelMisses: number; end: EndState } | null;
}

async function timedRun(t: Tally): Promise<void> {
  t.attempts++;
  const r = await oneRun(t.prepared);
  const end = t.prepared.ad.endState(r.book);
  const ok = stateOk(end, r.misses);
  t.allOk = t.allOk && ok;
  t.lastRun = { ok, cancelMisses: r.misses, end };
  const row: Row = {
    run: t.attempts,
    opsPerSec: Math.round(r.opsPerSec),
    secs: +r.secs.toFixed(3),
    nsPerOp: +((r.secs * 1e9) / ops.length).toFixed(0),
    gc: r.gc,
    heapGrowthDuringRunMB: mb(r.heapAfterNoGc - r.heapBefore),
    stateMatchesShadowBook: ok,
    foreignCpuPct: r.foreignPct,
  };
  const clean = r.foreignPct === null || r.foreignPct < FOREIGN_MAX;
  (clean ? t.results : t.rejected).push(row);
  const note = clean ? '' : `  <- rejected: other processes used ${r.foreignPct}% of a core`;
  console.log(`${t.prepared.ad.name.padEnd(5)} ${JSON.stringify(row)}${note}`);
}

/** Retained heap of one populated book at the end of a run (heap with it minus heap without it). */
async function bookMemoryMB(p: Prepared): Promise<number> {
  fullGc();
  const heapEmpty = process.memoryUsage().heapUsed;
  const keep = (await oneRun(p)).book;
  fullGc();
  const heapWithBook = process.memoryUsage().heapUsed;
  void keep;
  return mb(heapWithBook - heapEmpty);
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;

const CPU = `${os.cpus()[0]?.model} x${os.cpus().length}`;
console.log(`node ${process.version} | ${CPU} | gc exposed: ${gcAvailable}`);
for (const { ad } of PREPARED) console.log(`adapter ${ad.name}: ${ad.engine}`);
console.log(`workload: seed=${SEED} prefill=${prefill.length} ops=${ops.length} mix=${JSON.stringify(mix)} ` +
  `(generated in ${genMs.toFixed(0)} ms)`);
const expected = {
  restingOrders: stats.restingOrders, bidQty: stats.bidQty, askQty: stats.askQty, bestBid: stats.bestBid,
  bestAsk: stats.bestAsk, fills: stats.trades, filledLots: stats.tradedQty, maxResting: stats.maxResting,
};
console.log(`expected end state: ${JSON.stringify(expected)}`);

for (let w = 0; w < WARMUP; w++) {
  for (const p of PREPARED) {
    const r = await oneRun(p);
    const rate = Math.round(r.opsPerSec).toLocaleString('en-US');
    console.log(`${p.ad.name.padEnd(5)} warm-up ${w + 1}: ${rate} ops/s`);
  }
}

const tallies: Tally[] = PREPARED.map((prepared) => ({
  prepared, results: [], rejected: [], attempts: 0, allOk: true, lastRun: null,
}));
const pending = (t: Tally): boolean => t.results.length < RUNS && t.attempts < MAX_ATTEMPTS;
while (tallies.some(pending)) {
  for (const t of tallies) if (pending(t)) await timedRun(t);
}

const ru = process.resourceUsage();
const summaries = [];
for (const t of tallies) {
  const { ad } = t.prepared;
  const opsps = t.results.map((r) => r.opsPerSec).sort((a, b) => a - b);
  const s: Record<string, unknown> = {
    name: ad.name,
    engine: ad.engine,
    medianOpsPerSec: t.results.length ? median(opsps) : null,
    minOpsPerSec: opsps[0] ?? null,
    maxOpsPerSec: opsps[opsps.length - 1] ?? null,
    medianGcMs: median(t.results.map((r) => r.gc.ms)),
    medianHeapGrowthMB: median(t.results.map((r) => r.heapGrowthDuringRunMB)),
    runs: t.results,
    rejectedRuns: t.rejected,
    correctness: { allRunsMatchShadowBook: t.allOk, lastRun: t.lastRun },
    bookAtEndOfRunMB: await bookMemoryMB(t.prepared),
  };
  if (LATENCY) {
    s.latency = latencyRun(t.prepared);
    console.log(`${ad.name.padEnd(5)} latency (per op, includes timer overhead): ` +
      JSON.stringify(s.latency));
  }
  summaries.push(s);
}

printTable(summaries);

function printTable(rows: Record<string, unknown>[]): void {
  const nob = rows.find((r) => r.name === 'nob')?.medianOpsPerSec as number | null | undefined;
  const fmt = (v: unknown): string => (typeof v === 'number' ? v.toLocaleString('en-US') : String(v));
  const head = ['adapter', 'median ops/s', 'min ops/s', 'max ops/s', 'ns/op', 'vs nob', 'runs', 'state',
    'GC ms', 'heap growth MB', 'book MB'];
  const body = rows.map((r) => {
    const med = r.medianOpsPerSec as number | null;
    const ok = (r.correctness as { allRunsMatchShadowBook: boolean }).allRunsMatchShadowBook;
    return [String(r.name), fmt(med), fmt(r.minOpsPerSec), fmt(r.maxOpsPerSec),
      med ? fmt(Math.round(1e9 / med)) : '-', nob && med ? `${(med / nob).toFixed(1)}x` : '-',
      `${(r.runs as Row[]).length}/${(r.runs as Row[]).length + (r.rejectedRuns as Row[]).length}`,
      ok ? 'OK' : 'MISMATCH', fmt(r.medianGcMs), fmt(r.medianHeapGrowthMB), fmt(r.bookAtEndOfRunMB)];
  });
  const widths = head.map((h, c) => Math.max(h.length, ...body.map((b) => (b[c] as string).length)));
  const line = (cells: string[]): string => cells.map((x, c) => (c === 0 ? x.padEnd(widths[c] as number)
    : x.padStart(widths[c] as number))).join('  ');
  console.log(`\n${line(head)}\n${widths.map((w) => '-'.repeat(w)).join('  ')}`);
  for (const b of body) console.log(line(b));
  console.log('(median of clean runs; GC ms and heap growth are medians per timed run; ' +
    `maxRSS ${mb(ru.maxRSS * 1024)} MB)`);
}

if (JSON_OUT) {
  writeFileSync(JSON_OUT, JSON.stringify({
    node: process.version,
    cpu: CPU,
    workload: {
      seed: SEED, n: ops.length, prefill: prefill.length, mix, targetResting: options.targetResting,
    },
    expected,
    adapters: summaries,
    memory: {
      maxRssMB: mb(ru.maxRSS * 1024), note: 'maxRSS covers every adapter and the pre-built workload',
    },
  }, null, 2));
}
obs.disconnect();
if (summaries.some((s) => !(s.correctness as { allRunsMatchShadowBook: boolean }).allRunsMatchShadowBook)) {
  process.exitCode = 1;
}
if (summaries.some((s) => s.medianOpsPerSec === null)) {
  console.log('no clean run for some adapter: machine too busy');
  process.exitCode = 2;
}
