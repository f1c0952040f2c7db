/**
 * Where an engine path allocates: replays the shared workload (bench/shared/workload.mjs) through
 * one adapter of book-bench.ts under V8's sampling heap profiler, counting every sampled
 * allocation (including objects the young-generation GC already collected), and prints bytes per
 * workload op by allocating function. Allocation drives the GC share of the full path, so this is
 * the profile to read before and after a change to the hot path; bytes per op are deterministic
 * to within the sampling error, unlike ops/s on a shared machine.
 *
 * Run: node --import tsx bench/engine/alloc-profile.ts [--adapter full|clob|book|nob] [--n 200000] [--top 30]
 * Not a test. Sites are named by function and file (tsx's output keeps no useful line numbers).
 */
import { Session } from 'node:inspector/promises';
import { parseArgs } from 'node:util';
import type { Adapter, WorkloadOp } from './adapters/adapter.ts';
import { bookAdapter } from './adapters/book.ts';
import { clobAdapter } from './adapters/clob.ts';
import { fullAdapter } from './adapters/full.ts';
import { nobAdapter } from './adapters/nob.ts';

const { values: args } = parseArgs({
  options: {
    adapter: { type: 'string', default: 'full' },
    n: { type: 'string', default: '200000' },
    top: { type: 'string', default: '30' },
    seed: { type: 'string', default: '42' },
  },
});
const ADAPTERS: Adapter<unknown, unknown>[] = [fullAdapter, clobAdapter, bookAdapter, nobAdapter];
const adapter = ADAPTERS.find((a) => a.name === args.adapter);
if (adapter === undefined) throw new Error(`no adapter ${args.adapter} (one of ${ADAPTERS.map((a) => a.name).join(', ')})`);
const N = Number(args.n);

interface SamplingNode {
  callFrame: { functionName: string; url: string };
  selfSize: number;
  children: SamplingNode[];
}
const workloadUrl = new URL('../shared/workload.mjs', import.meta.url).href;
const { buildWorkload } = (await import(workloadUrl)) as {
  buildWorkload(o: object): { prefill: WorkloadOp[]; ops: WorkloadOp[] };
};

const workload = buildWorkload({ n: N, seed: Number(args.seed), targetResting: 5_000, prefill: 5_000 });
const prefill = adapter.prepare(workload.prefill);
const ops = adapter.prepare(workload.ops);
const book = adapter.newBook();
adapter.replay(book, prefill);

const session = new Session();
session.connect();
await session.post('HeapProfiler.enable');
await session.post('HeapProfiler.startSampling', {
  samplingInterval: 4096,
  includeObjectsCollectedByMajorGC: true,
  includeObjectsCollectedByMinorGC: true,
});
adapter.replay(book, ops);
const { profile } = (await session.post('HeapProfiler.stopSampling')) as unknown as { profile: { head: SamplingNode } };
session.disconnect();

const bySite = new Map<string, number>();
let total = 0;
const walk = (node: SamplingNode): void => {
  const f = node.callFrame;
  const site = `${f.functionName || '(anonymous)'} ${f.url.split('/').slice(-2).join('/')}`;
  bySite.set(site, (bySite.get(site) ?? 0) + node.selfSize);
  total += node.selfSize;
  for (const child of node.children) walk(child);
};
walk(profile.head);

console.log(`adapter ${adapter.name}: ${adapter.engine}`);
console.log(`${N} ops, ${(total / 1048576).toFixed(1)} MB sampled, ${Math.round(total / N)} bytes per op`);
for (const [site, bytes] of [...bySite].sort((a, b) => b[1] - a[1]).slice(0, Number(args.top))) {
  console.log(`${((bytes / total) * 100).toFixed(1).padStart(5)} % ${String(Math.round(bytes / N)).padStart(6)} B/op  ${site}`);
}
