/**
 * The real service as a child process for the benchmarks that run it (gateway, streams):
 * `node --import tsx src/main.ts` on a given DATA_DIR with the test settings (simulated chain with
 * fast blocks, admin token, market maker off) plus the caller's overrides, resolved once /health
 * answers. BENCH_NODE_ARGS adds node flags (e.g. --cpu-prof).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { testServiceEnv, waitFor } from '../../test/support/harness.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

export async function startService(dataDir: string, port: number, env: Record<string, string> = {}): Promise<ChildProcess> {
  const nodeArgs = (process.env.BENCH_NODE_ARGS ?? '').split(' ').filter((a) => a !== '');
  const child = spawn(process.execPath, [...nodeArgs, '--import', 'tsx', 'src/main.ts'], {
    cwd: ROOT,
    env: { ...process.env, ...testServiceEnv(dataDir, port), ...env },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  let exited: number | null = null;
  child.once('exit', (code) => (exited = code ?? -1));
  await waitFor(async () => {
    if (exited !== null) throw new Error(`service exited with ${exited}`);
    try {
      return (await fetch(`http://127.0.0.1:${port}/health`)).status === 200;
    } catch {
      return false;
    }
  }, 30_000, 50);
  return child;
}
