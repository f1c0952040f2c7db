/**
 * Which core leads: a PostgreSQL advisory lock held on a dedicated connection, and an epoch
 * (core_leader.epoch, migrations/postgres/1000_command_log.sql) bumped by each core that takes it.
 * The lock says who should lead; the epoch is what makes a deposed leader harmless
 * (docs/architecture.md "Distributed mode: the command log and the leader lease").
 *
 * The lock alone is not enough: a leader can lose it without knowing (its lease connection died,
 * the server ended the session, the process paused past every timeout) and go on appending. So
 * every append of the command log (command-log.ts) runs in a transaction that first reads
 * `SELECT epoch FROM core_leader WHERE id = 1 FOR SHARE` and refuses if the epoch is not its own.
 * That check is safe without any timing assumption:
 *
 *   - a new leader's bump (`UPDATE core_leader SET epoch = epoch + 1`) and an old leader's append
 *     lock the same row in conflicting modes, so they serialize: either the append committed first
 *     (the bump waited for it), or the bump committed first and the append's FOR SHARE reads the
 *     new epoch (READ COMMITTED re-reads a row updated under it) and appends nothing;
 *   - the new leader reads the log's head only after its bump committed (PgCommandLog.lead), so
 *     its head includes every batch the old leader committed, and its first seq follows them.
 *
 * A paused old leader holding FOR SHARE would delay the bump, not break it: its session's
 * idle_in_transaction_session_timeout and statement_timeout end that transaction on the server.
 * Losing the lease connection (`onLost`) tells the process to stop leading at once (fail-stop);
 * the keepalive query notices a dead connection within about a second, and TCP keepalive covers
 * an idle socket whose peer vanished. None of that is needed for safety, only for a prompt stop.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';

/** The advisory lock's key: "exchange" in ASCII, one key for the whole deployment's cores. */
export const LEADER_LOCK_KEY = 0x65786368616e6765n;

export interface LeaderLeaseOptions {
  /** Between keepalive queries on the lease connection (ms). */
  readonly keepaliveMs?: number;
  /** How long a query on the lease connection may take before the lease counts as lost (ms). */
  readonly timeoutMs?: number;
  /**
   * Another lease than the core's (its own advisory-lock key, its session's name), without the
   * core_leader epoch: the stream producer's (docs/deploy.md "Streams across gateways").
   */
  readonly other?: { readonly lockKey: bigint; readonly applicationName: string };
}

export interface AcquireOptions {
  /** Between attempts to take the lock while another core holds it (ms). */
  readonly pollMs: number;
  /** Gives up waiting (acquire rejects with the signal's reason). */
  readonly signal?: AbortSignal;
}

export class LeaderLease {
  private client: pg.Client | null = null;
  private readonly lostListeners: ((error: Error) => void)[] = [];
  private lost: Error | null = null;
  private held = false;
  private released = false;
  private keepalive: NodeJS.Timeout | null = null;
  private readonly keepaliveMs: number;
  private readonly timeoutMs: number;
  private readonly lockKey: string;

  constructor(private readonly url: string, private readonly options: LeaderLeaseOptions = {}) {
    this.keepaliveMs = options.keepaliveMs ?? 1_000;
    this.timeoutMs = options.timeoutMs ?? 5_000;
    this.lockKey = (options.other?.lockKey ?? LEADER_LOCK_KEY).toString();
  }

  /**
   * Waits until this process holds the lock, then bumps the epoch and returns it: the fencing
   * token the command log's writer is given (PgCommandLog.lead). `holder` is recorded in
   * core_leader for operators. Rejects if the connection fails while waiting (the caller retries
   * with a new lease) or `signal` aborts. A lease of `other` returns 0 (it has no epoch).
   */
  async acquire(holder: string, options: AcquireOptions): Promise<number> {
    if (this.client !== null || this.released) throw new Error('a LeaderLease is acquired once');
    const client = new pg.Client({
      connectionString: this.url,
      application_name: this.options.other?.applicationName ?? 'exchange-core-lease',
      connectionTimeoutMillis: this.timeoutMs,
      query_timeout: this.timeoutMs,
      keepAlive: true,
      keepAliveInitialDelayMillis: this.keepaliveMs,
      // The server ends this session once it has sat idle longer than the lease's timeout. The
      // keepalive queries it every second, so an idle session means its process hung (or its
      // host vanished, which TCP notices only after hours), and ending the session frees the lock
      // for a standby; the hung leader, if it wakes, finds its lease lost and its appends fenced.
      // Without it a paused leader kept the lock and nobody led for as long as it was paused
      // (test/cluster/kill-leader.test.ts, SIGSTOP of the leader).
      options: `-c idle_session_timeout=${this.timeoutMs}`,
    });
    this.client = client;
    client.on('error', (error) => this.lose(error));
    client.on('end', () => this.lose(new Error('the leader lease\'s connection to PostgreSQL ended')));
    try {
      await client.connect();
      while (!(await this.tryLock(client))) {
        options.signal?.throwIfAborted();
        await sleep(options.pollMs, undefined, { signal: options.signal });
      }
      if (this.lost !== null) throw this.lost;
      if (this.options.other !== undefined) {
        this.held = true;
        this.startKeepalive(client);
        return 0;
      }
      // A longer timeout here: the bump waits for a deposed leader's append in flight (it holds
      // core_leader FOR SHARE), whose own session timeouts (command-log.ts) bound that wait.
      const { rows } = await client.query<{ epoch: string }>({
        text: 'UPDATE core_leader SET epoch = epoch + 1, holder = $1, since = now() WHERE id = 1 RETURNING epoch',
        values: [holder],
        query_timeout: 3 * this.timeoutMs,
      } as pg.QueryConfig);
      this.held = true;
      this.startKeepalive(client);
      return Number(rows[0]!.epoch);
    } catch (error) {
      this.released = true;
      client.end().catch(() => undefined);
      throw options.signal?.aborted === true ? options.signal.reason : error;
    }
  }

  /** Calls `listener` once if the lease is lost after it was acquired: stop leading at once. */
  onLost(listener: (error: Error) => void): void {
    this.lostListeners.push(listener);
  }

  /** The lease connection's backend pid (operators and tests find the session by it). */
  async backendPid(): Promise<number> {
    if (this.client === null) throw new Error('the lease is not acquired');
    const { rows } = await this.client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
    return rows[0]!.pid;
  }

  /** Gives the lock up (ending the session releases it); `onLost` does not fire. */
  async release(): Promise<void> {
    this.released = true;
    this.stopKeepalive();
    const client = this.client;
    if (client === null) return;
    await client.query('SELECT pg_advisory_unlock($1)', [this.lockKey]).catch(() => undefined);
    await client.end().catch(() => undefined);
  }

  private async tryLock(client: pg.Client): Promise<boolean> {
    const { rows } = await client.query<{ held: boolean }>('SELECT pg_try_advisory_lock($1) AS held', [this.lockKey]);
    return rows[0]!.held;
  }

  private startKeepalive(client: pg.Client): void {
    this.keepalive = setInterval(() => void this.ping(client), this.keepaliveMs);
    this.keepalive.unref(); // the lease alone keeps no process alive
  }

  private async ping(client: pg.Client): Promise<void> {
    try {
      await client.query('SELECT 1');
    } catch (error) {
      this.lose(error instanceof Error ? error : new Error(String(error)));
    }
  }

  private lose(error: Error): void {
    if (this.lost !== null || this.released) return;
    this.lost = error;
    this.stopKeepalive();
    this.client?.end().catch(() => undefined);
    if (this.held) for (const listener of this.lostListeners) listener(error);
  }

  private stopKeepalive(): void {
    if (this.keepalive !== null) clearInterval(this.keepalive);
    this.keepalive = null;
  }
}
