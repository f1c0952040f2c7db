/**
 * What a snapshot costs the event loop (issue 26: "without holding the event loop for more than a
 * few milliseconds"): the service runs in this process with the reference market maker and the
 * simulated feed (the default workload) on a fresh DATA_DIR, and the event loop's delay is sampled
 * (perf_hooks monitorEventLoopDelay, 1 ms resolution) over two windows of the same length: one in
 * which no snapshot is written, and one in which a snapshot is asked for every `--every` ms (the
 * worker thread replays, encodes and writes it; the event loop only starts the worker and takes its
 * report). The maximum and p99 delays of the two windows are compared, with the snapshots' own
 * figures (from the worker's reports).
 *
 * Run: node --import tsx bench/store/snapshot-pause.ts [--warmup 90 --window 60 --every 5000]
 * Figures: docs/performance.md ("Restart").
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { loadSettings } from '../../src/config/env.ts';
import { createService } from '../../src/service.ts';
import type { SnapshotWorkerReport } from '../../src/adapters/store/snapshot-worker.ts';

const { values: args } = parseArgs({
  options: {
    warmup: { type: 'string', default: '90' },
    window: { type: 'string', default: '60' },
    every: { type: 'string', default: '5000' },
  },
});
const dir = mkdtempSync(join(tmpdir(), 'snapshot-pause-'));
// Snapshots only when asked: the intervals are set out of reach.
const settings = loadSettings({ DATA_DIR: dir, PORT: '0', LOG_LEVEL: 'silent', SNAPSHOT_EVERY_COMMANDS: '1000000000', SNAPSHOT_EVERY_MS: String(7 * 86_400_000) });
const service = await createService(settings, { logger: false });
await service.listen();
const sleep = (s: number) => new Promise((r) => setTimeout(r, s * 1000));

async function window(seconds: number, snapshotEveryMs: number | null) {
  const delay = monitorEventLoopDelay({ resolution: 1 });
  const reports: SnapshotWorkerReport[] = [];
  let stop = false;
  const snapshots = (async () => {
    while (snapshotEveryMs !== null && !stop) {
      await sleep(snapshotEveryMs / 1000);
      if (!stop) reports.push(await service.snapshotter.snapshotNow());
    }
  })();
  delay.enable();
  await sleep(seconds);
  delay.disable();
  stop = true;
  await snapshots;
  const ms = (ns: number) => +(ns / 1e6).toFixed(2);
  const written = reports.filter((r): r is Extract<SnapshotWorkerReport, { written: true }> => r.ok && r.written);
  return {
    snapshots: written.length,
    eventLoopDelayMs: { p50: ms(delay.percentile(50)), p99: ms(delay.percentile(99)), max: ms(delay.max) },
    workerMs: written.length === 0 ? null : {
      replay: Math.round(written.reduce((n, r) => n + r.ms.replay, 0) / written.length),
      encode: Math.round(written.reduce((n, r) => n + r.ms.encode, 0) / written.length),
      write: Math.round(written.reduce((n, r) => n + r.ms.write, 0) / written.length),
    },
    imageBytes: written.at(-1)?.imageBytes ?? null,
  };
}

try {
  await sleep(Number(args.warmup));
  const seconds = Number(args.window);
  const without = await window(seconds, null);
  const withSnapshots = await window(seconds, Number(args.every));
  console.log(JSON.stringify({ windowSeconds: seconds, withoutSnapshots: without, withSnapshots }, null, 2));
} finally {
  await service.close();
  rmSync(dir, { recursive: true, force: true });
}
