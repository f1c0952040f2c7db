/**
 * The real service as a child process (`node --import tsx src/main.ts`) on a given DATA_DIR and
 * port, for the crash tests: started, waited for, and killed with SIGKILL, as an operator's kill -9
 * or a power cut would stop it.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import http from 'node:http';
import { fileURLToPath } from 'node:url';
import { testServiceEnv, waitFor } from './harness.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/**
 * GET /health from 127.0.0.2, the status or 0 if nothing answered. The tests' own requests come
 * from 127.0.0.1: a readiness probe must not spend that address's budgets (RATE_LIMIT_ANONYMOUS
 * counts /health too, and gateways share it in PostgreSQL: the API suite against the cluster, whose
 * before hook signs in on a budget of 4 requests, was refused after the gateways' probes).
 */
function probe(url: string): Promise<number> {
  return new Promise((resolve) => {
    const req = http.get(url, { localAddress: '127.0.0.2' }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('error', () => resolve(0));
  });
}

export class ServiceProcess {
  child: ChildProcess | null = null;
  private lines: string[] = [];
  readonly url: string;

  constructor(
    private readonly dataDir: string,
    private readonly port: number,
    /** Settings beyond the test defaults (the crash tests raise limits and shape the journal). */
    private readonly env: Record<string, string> = {},
  ) {
    this.url = `http://127.0.0.1:${port}`;
  }

  async start(): Promise<number> {
    const started = Date.now();
    this.lines = [];
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
      cwd: ROOT,
      env: {
        ...process.env,
        ...testServiceEnv(this.dataDir, this.port),
        ...this.env,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.child = child;
    const keep = (chunk: Buffer) => {
      this.lines.push(...chunk.toString().split('\n').filter((l) => l.length > 0));
      if (this.lines.length > 400) this.lines = [...this.lines.slice(0, 100), ...this.lines.slice(-200)];
    };
    child.stdout?.on('data', keep);
    child.stderr?.on('data', keep);
    let exited: number | null = null;
    child.once('exit', (code) => (exited = code ?? -1));
    await waitFor(async () => {
      if (exited !== null) throw new Error(`service exited with ${exited}:\n${this.tail()}`);
      return (await probe(`${this.url}/health`)) === 200;
    }, 30_000, 50);
    return Date.now() - started;
  }

  kill(): Promise<void> {
    const child = this.child;
    this.child = null;
    if (child === null || child.exitCode !== null) return Promise.resolve();
    const gone = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.kill('SIGKILL');
    return gone;
  }

  tail(): string {
    return this.lines.slice(-20).join('\n');
  }

  /** What the process printed since it was last started (its first 100 lines and the latest). */
  output(): string {
    return this.lines.join('\n');
  }
}
