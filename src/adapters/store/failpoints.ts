/**
 * Failpoints for the crash tests (docs/architecture.md "Snapshots"): named places in the writing of
 * snapshots and segments where a test may hold the thread for a while, so that its kill -9 lands
 * inside the write deterministically instead of by luck. Set by the environment of the process under
 * test, `EXCHANGE_FAILPOINTS="snapshot.before-rename=300,segment.before-rename=300"` (milliseconds);
 * unset, as in every real deployment, `pause` costs one map lookup. Only worker threads that write
 * files pause here, never the event loop.
 */

const points = new Map<string, number>();
for (const entry of (process.env.EXCHANGE_FAILPOINTS ?? '').split(',')) {
  const [name, ms] = entry.split('=');
  if (name !== undefined && name !== '' && Number(ms) > 0) points.set(name.trim(), Number(ms));
}

/** Holds the calling thread at the failpoint `name` for as long as the environment says (usually not at all). */
export function pause(name: 'snapshot.before-rename' | 'segment.before-rename'): void {
  const ms = points.get(name);
  if (ms !== undefined) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}
