/**
 * Time to serve from a fresh start: the service started as a user starts it (`npm start` by
 * default), on an empty DATA_DIR and a free port, timed from the spawn to the first 200 of
 * GET /health, then stopped (SIGTERM to its process group) and its data directory removed. Runs
 * alternate between MARKET_MAKER=off and on (and between the commands, when several are given)
 * so that all see the same phases of the machine; the median, min and max of each are printed. The service's own settings are the README's defaults
 * apart from DATA_DIR, PORT and MARKET_MAKER (and whatever the environment adds: e.g.
 * TSX_DISABLE_CACHE=1 for tsx's first-run cost, or NODE_OPTIONS=--cpu-prof).
 *
 * Run: node --import tsx bench/start/fresh-start.ts [--runs 5] [--maker off,on]
 *        [--command 'npm start' | 'node scripts/start.mjs' | 'node --import tsx src/main.ts' ...]
 * A command runs in the repository's root through the shell (so `cd /elsewhere && npm start` works).
 * Figures: docs/performance.md ("Start").
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { request } from 'node:http';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

const { values: args } = parseArgs({
  options: {
    runs: { type: 'string', default: '5' },
    maker: { type: 'string', default: 'off,on' },
    command: { type: 'string', multiple: true, default: ['npm start'] },
    timeout: { type: 'string', default: '30000' },
  },
});

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address !== null ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

/** One GET /health: its status, or 0 when nothing answers yet. */
function health(port: number): Promise<number> {
  return new Promise((resolve) => {
    const req = request({ host: '127.0.0.1', port, path: '/health', agent: false, timeout: 1000 }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.once('error', () => resolve(0));
    req.once('timeout', () => req.destroy());
    req.end();
  });
}

/** One fresh start: milliseconds from the spawn to the first 200 of /health. */
async function startOnce(command: string, maker: string): Promise<number> {
  const dataDir = mkdtempSync(join(tmpdir(), 'exchange-start-'));
  const port = await freePort();
  const started = performance.now();
  // Its own process group, so the stop reaches node under npm and sh too.
  const child = spawn(command, {
    cwd: ROOT,
    shell: true,
    detached: true,
    env: { ...process.env, DATA_DIR: dataDir, PORT: String(port), MARKET_MAKER: maker },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-4000)));
  let exited: number | null = null;
  const exit = new Promise<void>((resolve) => child.once('exit', (code) => {
    exited = code ?? -1;
    resolve();
  }));
  try {
    for (;;) {
      if (exited !== null) throw new Error(`the service exited with ${exited} before serving:\n${stderr}`);
      if (performance.now() - started > Number(args.timeout)) throw new Error(`no 200 from /health in ${args.timeout} ms:\n${stderr}`);
      if ((await health(port)) === 200) return performance.now() - started;
      await new Promise((r) => setTimeout(r, 5));
    }
  } finally {
    if (exited === null && child.pid !== undefined) {
      process.kill(-child.pid, 'SIGTERM');
      const killer = setTimeout(() => child.pid !== undefined && process.kill(-child.pid, 'SIGKILL'), 10_000);
      await exit;
      clearTimeout(killer);
    }
    rmSync(dataDir, { recursive: true, force: true });
  }
}

const makers = args.maker.split(',');
const runs = Number(args.runs);
const settings = args.command.flatMap((command) => makers.map((maker) => ({ command, maker, label: `\`${command}\` MARKET_MAKER=${maker}` })));
const times = new Map<string, number[]>(settings.map((s) => [s.label, []]));
console.log(`fresh start: ${runs} runs per setting, empty DATA_DIR, spawn to the first 200 of GET /health`);
for (let run = 0; run < runs; run++) {
  for (const { command, maker, label } of settings) {
    const ms = await startOnce(command, maker);
    times.get(label)?.push(ms);
    console.log(`  run ${run + 1} ${label}: ${ms.toFixed(0)} ms`);
  }
}
for (const [label, list] of times) {
  const sorted = [...list].sort((a, b) => a - b);
  const median = sorted[Math.floor(sorted.length / 2)] ?? NaN;
  console.log(`${label}: median ${median.toFixed(0)} ms (min ${sorted[0]?.toFixed(0)}, max ${sorted.at(-1)?.toFixed(0)}, ${sorted.length} runs)`);
}
