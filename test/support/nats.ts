/**
 * A real NATS server with JetStream for the distributed mode's tests: Debian's `nats-server`
 * (`nats-server -js -sd <temporary folder> -a 127.0.0.1 -p <free port>`), started and stopped or
 * killed with SIGKILL by the test, and restarted on the same folder and port; optionally asking for
 * a token and speaking TLS only (test/support/certificates.ts makes the certificates).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './harness.ts';
import { awaitServerReady } from './server-child.ts';

/** A server that asks for a token, and speaks TLS only (verifying client certificates against `verifyClientsWith`). */
export interface NatsServerSecurity {
  readonly token?: string;
  readonly tls?: { readonly cert: string; readonly key: string; readonly verifyClientsWith?: string };
}

export class NatsServer {
  private child: ChildProcess | null = null;

  private constructor(readonly dir: string, readonly port: number, private readonly security: NatsServerSecurity) {}

  static async start(security: NatsServerSecurity = {}): Promise<NatsServer> {
    const server = new NatsServer(mkdtempSync(join(tmpdir(), 'exchange-nats-')), await freePort(), security);
    await server.restart();
    return server;
  }

  get url(): string {
    return `nats://127.0.0.1:${this.port}`;
  }

  async restart(): Promise<void> {
    const { token, tls } = this.security;
    const args = ['-js', '-sd', this.dir, '-a', '127.0.0.1', '-p', String(this.port)];
    if (token !== undefined) args.push('--auth', token);
    if (tls !== undefined) args.push('--tls', '--tlscert', tls.cert, '--tlskey', tls.key);
    if (tls?.verifyClientsWith !== undefined) args.push('--tlsverify', '--tlscacert', tls.verifyClientsWith);
    const child = spawn(natsServerBin(), args, { stdio: ['ignore', 'pipe', 'pipe'] });
    this.child = child;
    await awaitServerReady('nats-server', child, async (output) => output.includes('Server is ready') && (await listening(this.port)), 15_000, 20);
  }

  pid(): number | null {
    return this.child?.pid ?? null;
  }

  async kill(): Promise<void> {
    await this.signal('SIGKILL');
  }

  async stop(): Promise<void> {
    await this.signal('SIGTERM');
  }

  async destroy(): Promise<void> {
    await this.stop();
    rmSync(this.dir, { recursive: true, force: true });
  }

  private async signal(signal: NodeJS.Signals): Promise<void> {
    const child = this.child;
    this.child = null;
    if (child === null || child.exitCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill(signal);
    await exited;
  }
}

/** Debian installs it in /usr/sbin, which is not on a non-root user's PATH. */
function natsServerBin(): string {
  for (const dir of (process.env.PATH ?? '').split(':')) if (dir !== '' && existsSync(join(dir, 'nats-server'))) return join(dir, 'nats-server');
  if (existsSync('/usr/sbin/nats-server')) return '/usr/sbin/nats-server';
  throw new Error('nats-server is not installed (apt-get install nats-server; .ci/run does)');
}

function listening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}
