/**
 * The real service as a child process (`node --import tsx src/main.ts`) on a given DATA_DIR and
 * port, for the crash tests: started, waited for, and killed with SIGKILL, as an operator's kill -9
 * or a power cut would stop it.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { testServiceEnv, waitFor } from './harness.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

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
      try {
        const r = await fetch(`${this.url}/health`);
        return r.status === 200;
      } catch {
        return false;
      }
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
