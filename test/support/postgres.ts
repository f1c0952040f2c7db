/**
 * A real PostgreSQL server for the distributed mode's tests: initdb in a temporary folder, then
 * `postgres -D … -p <free port>` on loopback, stopped (or killed with SIGKILL, as a crash test
 * does) by the test. Debian's binaries live under /usr/lib/postgresql/<major>/bin, off PATH; the
 * server refuses to run as root, so as root it runs as the `postgres` user through `su`, and is
 * stopped by the pid in its postmaster.pid (a process started through su is not our child's group).
 *
 * Durability settings stay at PostgreSQL's defaults (fsync on, synchronous_commit on): the crash
 * tests rely on them, and the command log is acknowledged only after its commit returns.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { freePort, waitFor } from './harness.ts';
import { awaitServerReady } from './server-child.ts';

/** The folder holding initdb and postgres: on PATH, else Debian's newest /usr/lib/postgresql/N/bin. */
export function postgresBinDir(): string {
  for (const dir of (process.env.PATH ?? '').split(':')) if (dir !== '' && existsSync(join(dir, 'initdb'))) return dir;
  const root = '/usr/lib/postgresql';
  const majors = existsSync(root) ? readdirSync(root).filter((d) => existsSync(join(root, d, 'bin', 'initdb'))) : [];
  majors.sort((a, b) => Number(b) - Number(a));
  if (majors.length === 0) throw new Error('PostgreSQL is not installed (apt-get install postgresql; .ci/run does)');
  return join(root, majors[0]!, 'bin');
}

const AS_ROOT = process.getuid?.() === 0;

/** Runs a server binary, as the postgres user when we are root. */
function runAsOwner(bin: string, args: readonly string[]): ChildProcess {
  if (!AS_ROOT) return spawn(bin, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  const line = [bin, ...args].map((a) => `'${a.replaceAll("'", `'\\''`)}'`).join(' ');
  return spawn('su', ['postgres', '-s', '/bin/sh', '-c', `exec ${line}`], { stdio: ['ignore', 'pipe', 'pipe'] });
}

export class PostgresServer {
  private child: ChildProcess | null = null;

  private constructor(readonly dir: string, readonly port: number, private readonly bin: string) {}

  /** A fresh cluster in a temporary folder on a free port, started and accepting connections. */
  static async start(): Promise<PostgresServer> {
    const bin = postgresBinDir();
    const root = mkdtempSync(join(tmpdir(), 'exchange-pg-'));
    chmodSync(root, 0o777);
    const dir = join(root, 'data');
    const initdb = [join(bin, 'initdb'), '-D', dir, '-A', 'trust', '-U', 'postgres', '--no-sync', '-E', 'UTF8'];
    if (AS_ROOT) execFileSync('su', ['postgres', '-s', '/bin/sh', '-c', initdb.join(' ')], { stdio: 'pipe' });
    else execFileSync(initdb[0]!, initdb.slice(1), { stdio: 'pipe' });
    const server = new PostgresServer(dir, await freePort(), bin);
    await server.restart();
    return server;
  }

  get url(): string {
    return `postgres://postgres@127.0.0.1:${this.port}/postgres`;
  }

  /** Starts the server on its folder (again, after a stop or a kill) and waits until it answers. */
  async restart(): Promise<void> {
    const child = runAsOwner(join(this.bin, 'postgres'), [
      '-D', this.dir, '-p', String(this.port), '-k', this.dir, '-c', 'listen_addresses=127.0.0.1',
      '-c', 'max_connections=200', '-c', 'log_min_messages=warning',
    ]);
    this.child = child;
    await awaitServerReady('postgres', child, async () => {
      const client = new pg.Client({ connectionString: this.url, connectionTimeoutMillis: 1000 });
      try {
        await client.connect();
        await client.query('SELECT 1');
        return true;
      } catch {
        return false;
      } finally {
        await client.end().catch(() => undefined);
      }
    }, 30_000, 50);
  }

  /** The postmaster's pid (from its pid file: under su it is not our child). */
  pid(): number | null {
    const file = join(this.dir, 'postmaster.pid');
    if (!existsSync(file)) return null;
    const pid = Number(readFileSync(file, 'utf8').split('\n')[0]);
    return Number.isInteger(pid) && pid > 0 ? pid : null;
  }

  /** kill -9 of the postmaster, as a crash: its backends exit when they see it gone. */
  async kill(): Promise<void> {
    await this.signal('SIGKILL');
  }

  /** A fast shutdown (SIGINT): sessions are ended and the server stops cleanly. */
  async stop(): Promise<void> {
    await this.signal('SIGINT');
  }

  /** Stops the server and removes its folder. */
  async destroy(): Promise<void> {
    await this.stop().catch(() => undefined);
    rmSync(join(this.dir, '..'), { recursive: true, force: true });
  }

  private async signal(signal: NodeJS.Signals): Promise<void> {
    const pid = this.pid();
    const child = this.child;
    this.child = null;
    if (pid === null) return;
    const backends = signal === 'SIGKILL' ? childPids(pid) : [];
    try {
      process.kill(pid, signal);
    } catch {
      return;
    }
    // The postmaster is gone when signal 0 fails; its backends follow within moments.
    await waitFor(() => !alive(pid), 30_000, 20);
    // Orphaned backends hold the shared memory until they notice; a restart waits for them.
    for (const backend of backends) await waitFor(() => !alive(backend), 10_000, 20);
    child?.kill('SIGKILL');
  }
}

function childPids(pid: number): number[] {
  try {
    return execFileSync('pgrep', ['-P', String(pid)], { stdio: 'pipe' }).toString().split('\n').filter((l) => l !== '').map(Number);
  } catch {
    return []; // pgrep exits 1 when nothing matches
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
