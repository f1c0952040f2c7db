/**
 * The distributed mode's durable record: the command log in PostgreSQL (migrations/postgres/
 * 1000_command_log.sql), read and written through the runtime's ports.
 *
 *   the leader core     writes it (`JournalWriter`, runtime/journal-port.ts): group commits, each
 *                       one transaction that first checks, under `FOR SHARE`, that core_leader's
 *                       epoch is still the one this core bumped when it took the lease
 *                       (leader-lease.ts), then inserts the batches' rows in one statement and
 *                       notifies `command_log` with the new head; an append resolves only after
 *                       its COMMIT returned (synchronous_commit = on, PostgreSQL's default);
 *   recovery            reads its head and replays it in pages by seq (`RecoveryLog`);
 *   the archive         holds what snapshots cover, moved out of the table by the projector
 *                       (command-log-archive.ts); reads take from it what the table no longer has;
 *   followers           (standby cores, gateways' replicas, the projector) read the records after
 *                       a seq and are told when the leader appended (`CommandLogTail`,
 *                       runtime/command-log-tail.ts).
 *
 * Every row is linked into the same CRC-32 chain as the embedded journal (journal-record.ts) and
 * every read checks it, so a record altered in the database is refused, named by its seq
 * (docs/architecture.md "Distributed mode: the command log and the leader lease").
 *
 * The writer fails stop: after any failure (fenced, connection lost, a duplicate command id, a
 * timeout) it rejects that append and every later one and tells its failure listeners once. A
 * commit that timed out may still have committed; the caller cannot know, which is why it answers
 * UNAVAILABLE (not a rejection) and why a retried submission keeps its command id: the log's
 * unique command_id applies it once.
 *
 * The distributed core keeps no history (a projector writes it from this log), so this writer's
 * `whenProjected` rejects, and recovery uses it as a `RecoveryLog` only.
 */
import pg from 'pg';
import type { CommandLogTail, LinkedRecord } from '../../runtime/command-log-tail.ts';
import type { CommittedCommand, JournalWriter, RecoveryLog } from '../../runtime/journal-port.ts';
import { encodeCommand } from '../store/command-codec.ts';
import { decodeRecord, GENESIS, link } from '../store/journal-record.ts';
import { ArchivedLog } from './command-log-archive.ts';

export interface PgCommandLogOptions {
  /**
   * How long one statement may take (ms) before it fails, on the server and on the client: a dead
   * or unreachable PostgreSQL fails an append (and the writer) instead of hanging it.
   */
  readonly timeoutMs?: number;
  /** Batches one commit may take: those queued while a commit is in flight join the next one. */
  readonly maxCoalesced?: number;
  /** Rows per page when replaying. */
  readonly pageSize?: number;
  /** How long the LISTEN connection waits before it reconnects after losing its server (ms). */
  readonly reconnectMs?: number;
}

const DEFAULTS = { timeoutMs: 5_000, maxCoalesced: 64, pageSize: 2_000, reconnectMs: 1_000 };

/** The channel the leader notifies, with the new head as the payload, at each commit. */
const CHANNEL = 'command_log';

/** An append refused because another core has taken the lead (the epoch moved on). */
export class FencedError extends Error {
  constructor(readonly epoch: number, readonly currentEpoch: number) {
    super(`fenced: this core leads at epoch ${epoch} but core_leader holds epoch ${currentEpoch} (another core has taken the lead); nothing was appended`);
    this.name = 'FencedError';
  }
}

interface StoredRow {
  seq: string;
  ts: string;
  command_id: string | null;
  command: Buffer;
  chain: string;
}

export class PgCommandLog implements JournalWriter, CommandLogTail, RecoveryLog {
  private readonly options: typeof DEFAULTS;
  private readonly pool: pg.Pool;
  private readonly listeners = new Set<Notifications>();
  private readonly archive: ArchivedLog;

  private constructor(private readonly url: string, options: PgCommandLogOptions, private readonly writer: GroupCommitter | null) {
    this.options = { ...DEFAULTS, ...options };
    this.pool = new pg.Pool({ ...connectionConfig(url, this.options.timeoutMs, 'exchange-command-log-reader'), max: 2 });
    // An idle client's error (the server restarted) must not crash the process; the next read fails loudly.
    this.pool.on('error', () => undefined);
    this.archive = new ArchivedLog(this.pool);
  }

  /** A reader of the log (a follower, or recovery before leading): appending is refused. */
  static follow(url: string, options: PgCommandLogOptions = {}): PgCommandLog {
    return new PgCommandLog(url, options, null);
  }

  /**
   * The log as the leader at `epoch` writes it: call after the lease's epoch bump
   * (LeaderLease.acquire). Reads the head and the last record's link on the writer's own
   * connection, after the bump, so they include every batch a deposed leader committed; throws a
   * FencedError if the epoch has already moved on.
   */
  static async lead(url: string, epoch: number, options: PgCommandLogOptions = {}): Promise<PgCommandLog> {
    const settings = { ...DEFAULTS, ...options };
    const client = new pg.Client(connectionConfig(url, settings.timeoutMs, 'exchange-command-log-writer'));
    const writer = await GroupCommitter.start(client, epoch, settings.maxCoalesced);
    return new PgCommandLog(url, options, writer);
  }

  // ---- JournalWriter (the leader) ----

  append(batch: readonly CommittedCommand[]): Promise<void> {
    if (this.writer === null) return Promise.reject(new Error('this command log is read-only: the core is not leading'));
    return this.writer.append(batch);
  }

  whenProjected(): Promise<void> {
    return Promise.reject(new Error('the distributed core keeps no history: history reads wait on the projector\'s watermark in PostgreSQL'));
  }

  onFailure(listener: (error: Error) => void): void {
    this.writer?.onFailure(listener);
  }

  /** Transactions the writer has committed (each may hold several batches). */
  get transactions(): number {
    return this.writer?.transactions ?? 0;
  }

  // ---- RecoveryLog and CommandLogTail (recovery, followers) ----

  async head(): Promise<number> {
    const { rows } = await this.pool.query<{ head: string }>('SELECT coalesce(max(seq), 0) AS head FROM command_log');
    return Number(rows[0]!.head);
  }

  async readAfter(afterSeq: number, previousLink: number, limit: number): Promise<LinkedRecord[]> {
    const { rows } = await this.pool.query<StoredRow>({
      name: 'command-log-read-after',
      text: 'SELECT seq, ts, command_id, command, chain FROM command_log WHERE seq > $1 ORDER BY seq LIMIT $2',
      values: [afterSeq, limit],
    });
    // Archived records left command_log in the same transaction that stored their segment, so
    // what this query missed, the archive holds (command-log-archive.ts). No row at all means the
    // reader is at the head (the head row is never archived): a caught-up follower's poll costs
    // one query, as before.
    if (rows.length > 0 && Number(rows[0]!.seq) !== afterSeq + 1) {
      const archived = await this.archive.readAfter(afterSeq, previousLink, limit);
      if (archived !== null) return archived;
    }
    this.archive.forget();
    return checkedRecords(rows, afterSeq, previousLink);
  }

  /**
   * The records from `fromSeq` to the head as it stands when the replay starts, in pages of
   * `pageSize` (the next page is read while the caller applies this one), each checked against
   * the chain from `previousLink` (default: the link of the record before `fromSeq`, read here).
   */
  async *replay(fromSeq = 1, previousLink?: number): AsyncGenerator<LinkedRecord> {
    const head = await this.head();
    let after = fromSeq - 1;
    let previous = previousLink ?? (await this.linkAt(after));
    const read = () => {
      const page = this.readAfter(after, previous, Math.min(this.options.pageSize, head - after));
      page.catch(() => undefined); // awaited below; a replay abandoned mid-way must not leave it unhandled
      return page;
    };
    let next = after < head ? read() : null;
    while (next !== null) {
      const page = await next;
      const last = page.at(-1);
      if (last === undefined) throw new Error(`the command log has no record at seq ${after + 1} (its head was ${head}): a record was lost or removed; refusing to replay past it`);
      after = last.seq;
      previous = last.link;
      next = after < head ? read() : null;
      yield* page;
    }
  }

  /** The seq the log holds command `commandId` at, or null (a retried submission is applied once). */
  async seqOfCommand(commandId: string): Promise<number | null> {
    const { rows } = await this.pool.query<{ seq: string }>('SELECT seq FROM command_log WHERE command_id = $1', [commandId]);
    return rows.length === 0 ? null : Number(rows[0]!.seq);
  }

  async onAppended(listener: (head: number) => void): Promise<() => Promise<void>> {
    const notifications = new Notifications(this.url, this.options, listener, () => this.head());
    await notifications.start();
    this.listeners.add(notifications);
    return async () => {
      this.listeners.delete(notifications);
      await notifications.stop();
    };
  }

  /** Closes every connection (the writer's, the readers', the LISTEN ones). */
  async close(): Promise<void> {
    await Promise.all([...this.listeners].map((n) => n.stop()));
    this.listeners.clear();
    await Promise.all([this.writer?.close(), this.pool.end().catch(() => undefined)]);
  }

  /** The link of record `seq` (GENESIS for 0). */
  private async linkAt(seq: number): Promise<number> {
    if (seq === 0) return GENESIS;
    const { rows } = await this.pool.query<{ chain: string }>('SELECT chain FROM command_log WHERE seq = $1', [seq]);
    if (rows.length > 0) return Number(rows[0]!.chain);
    const archived = await this.archive.linkAt(seq);
    if (archived === null) throw new Error(`the command log has no record at seq ${seq}: cannot check the chain after it`);
    return archived;
  }
}

/** A pg connection's settings: statement timeouts on both ends, TCP keepalive, a name in pg_stat_activity. */
function connectionConfig(url: string, timeoutMs: number, name: string): pg.ClientConfig {
  return {
    connectionString: url,
    application_name: name,
    connectionTimeoutMillis: timeoutMs,
    statement_timeout: timeoutMs,
    // A writer paused mid-transaction (it holds core_leader FOR SHARE) must not block the next
    // leader's epoch bump for longer than this: the server ends its session.
    idle_in_transaction_session_timeout: timeoutMs,
    // The client-side guard: a server that died without closing the socket answers nothing.
    query_timeout: timeoutMs + 1_000,
    keepAlive: true,
  };
}

/** `rows` (read after `afterSeq`) as records, checked: contiguous, each link matching, each decoding. */
function checkedRecords(rows: readonly StoredRow[], afterSeq: number, previousLink: number): LinkedRecord[] {
  const records: LinkedRecord[] = [];
  let previous = previousLink;
  let expected = afterSeq + 1;
  for (const row of rows) {
    const seq = Number(row.seq);
    if (seq !== expected) throw new Error(`the command log has no record at seq ${expected} (the next is seq ${seq}): a record was lost or removed; refusing to replay past it`);
    const chain = Number(row.chain);
    const record = decodeRecord({ seq, ts: Number(row.ts), command: row.command, chain }, previous);
    records.push({ ...record, link: chain, commandId: row.command_id });
    previous = chain;
    expected++;
  }
  return records;
}

interface Queued {
  readonly batch: readonly CommittedCommand[];
  readonly resolve: () => void;
  readonly reject: (error: Error) => void;
}

const INSERT = `INSERT INTO command_log (seq, epoch, ts, command_id, command, chain)
  SELECT seq, $2, ts, command_id, command, chain
  FROM unnest($1::bigint[], $3::bigint[], $4::text[], $5::bytea[], $6::bigint[]) AS row(seq, ts, command_id, command, chain)`;

/**
 * The leader's group commit on its own connection: batches that queue while a commit is in flight
 * (at most `maxCoalesced`) go together in the next one, in the order they were appended.
 */
class GroupCommitter {
  private queue: Queued[] = [];
  private committing = false;
  private failure: Error | null = null;
  private readonly failureListeners: ((error: Error) => void)[] = [];
  transactions = 0;

  private constructor(private readonly client: pg.Client, private readonly epoch: number, private readonly maxCoalesced: number, private head: number, private lastLink: number) {
    client.on('error', (error) => this.fail(error));
    client.on('end', () => this.fail(new Error('the command log writer\'s connection to PostgreSQL ended')));
  }

  static async start(client: pg.Client, epoch: number, maxCoalesced: number): Promise<GroupCommitter> {
    client.on('error', () => undefined); // until the committer listens: a failure here surfaces as a rejected query
    await client.connect();
    try {
      await client.query('BEGIN');
      const current = await currentEpoch(client);
      if (current !== epoch) throw new FencedError(epoch, current);
      const { rows } = await client.query<{ seq: string; chain: string }>('SELECT seq, chain FROM command_log ORDER BY seq DESC LIMIT 1');
      const last = rows[0];
      if (last === undefined) await refuseEmptyButArchived(client);
      await client.query('COMMIT');
      return new GroupCommitter(client, epoch, maxCoalesced, last === undefined ? 0 : Number(last.seq), last === undefined ? GENESIS : Number(last.chain));
    } catch (error) {
      await client.end().catch(() => undefined);
      throw error;
    }
  }

  append(batch: readonly CommittedCommand[]): Promise<void> {
    if (this.failure !== null) return Promise.reject(this.failure);
    return new Promise((resolve, reject) => {
      this.queue.push({ batch, resolve, reject });
      if (!this.committing) void this.commitQueued();
    });
  }

  onFailure(listener: (error: Error) => void): void {
    if (this.failure !== null) {
      const failure = this.failure;
      queueMicrotask(() => listener(failure));
    } else {
      this.failureListeners.push(listener);
    }
  }

  /** Stops the writer: what is queued rejects; the failure listeners are not told (it did not fail). */
  async close(): Promise<void> {
    this.fail(new Error('the command log writer was closed'), false);
  }

  private async commitQueued(): Promise<void> {
    this.committing = true;
    while (this.queue.length > 0 && this.failure === null) {
      const taken = this.queue.splice(0, this.maxCoalesced);
      const commands = taken.flatMap((q) => q.batch);
      try {
        if (commands.length > 0) await this.commit(commands);
      } catch (error) {
        for (const q of taken) q.reject(asError(error));
        this.fail(asError(error));
        break;
      }
      if (commands.length > 0) this.transactions++;
      for (const q of taken) q.resolve();
    }
    this.committing = false;
  }

  /**
   * One transaction: the fencing check, every row in one INSERT, the notification (delivered at
   * COMMIT). BEGIN rides with the check, and the notification with COMMIT, in one simple-protocol
   * round trip each (the head is an integer this code formats): three round trips a commit.
   */
  private async commit(commands: readonly CommittedCommand[]): Promise<void> {
    const seqs: number[] = [];
    const times: number[] = [];
    const ids: (string | null)[] = [];
    const bytes: Buffer[] = [];
    const chains: number[] = [];
    let previous = this.lastLink;
    for (const [i, item] of commands.entries()) {
      const seq = this.head + 1 + i;
      const command = encodeCommand(item.command);
      previous = link(previous, seq, item.ts, command);
      seqs.push(seq);
      times.push(item.ts);
      ids.push(item.commandId ?? null);
      bytes.push(command);
      chains.push(previous);
    }
    const head = this.head + commands.length;
    const [, check] = (await this.client.query('BEGIN; SELECT epoch FROM core_leader WHERE id = 1 FOR SHARE')) as unknown as pg.QueryResult<{ epoch: string }>[];
    const current = Number(check!.rows[0]!.epoch);
    if (current !== this.epoch) throw new FencedError(this.epoch, current);
    await this.client.query({ name: 'command-log-insert', text: INSERT, values: [seqs, this.epoch, times, ids, bytes, chains] });
    await this.client.query(`SELECT pg_notify('${CHANNEL}', '${head}'); COMMIT`);
    this.head = head;
    this.lastLink = previous;
  }

  /** Stops for good: rejects everything queued, tells the listeners once, drops the connection. */
  private fail(error: Error, tell = true): void {
    if (this.failure !== null) return;
    this.failure = error;
    const queued = this.queue;
    this.queue = [];
    for (const q of queued) q.reject(error);
    // Not awaited: against a dead server, ending the connection may take as long as its timeout.
    this.client.end().catch(() => undefined);
    if (tell) for (const listener of this.failureListeners) listener(error);
  }
}

/**
 * The archive never takes the head row (command-log-archive.ts), so an empty command_log with
 * segments means rows were removed by hand: leading from seq 0 would fork the log. Fail loudly.
 */
async function refuseEmptyButArchived(client: pg.ClientBase): Promise<void> {
  const { rows } = await client.query<{ through: string | null }>('SELECT max(last_seq) AS through FROM command_log_segments');
  const through = rows[0]!.through;
  if (through !== null) throw new Error(`command_log is empty but its archive ends at seq ${through}: refusing to lead from seq 0 (the head row was removed)`);
}

async function currentEpoch(client: pg.ClientBase): Promise<number> {
  const { rows } = await client.query<{ epoch: string }>('SELECT epoch FROM core_leader WHERE id = 1 FOR SHARE');
  return Number(rows[0]!.epoch);
}

function asError(error: unknown): Error {
  return error instanceof Error ? error : new Error(String(error));
}

/**
 * A LISTEN connection for `command_log`, reconnecting after `reconnectMs` when it loses its
 * server; after a reconnection it reports the current head, since notifications sent while it was
 * away are lost.
 */
class Notifications {
  private client: pg.Client | null = null;
  private stopped = false;
  private retry: NodeJS.Timeout | null = null;

  constructor(
    private readonly url: string,
    private readonly options: typeof DEFAULTS,
    private readonly listener: (head: number) => void,
    private readonly head: () => Promise<number>,
  ) {}

  async start(): Promise<void> {
    const client = new pg.Client(connectionConfig(this.url, this.options.timeoutMs, 'exchange-command-log-listener'));
    client.on('error', () => this.lost(client));
    client.on('end', () => this.lost(client));
    client.on('notification', (message) => {
      if (message.channel === CHANNEL && message.payload !== undefined) this.listener(Number(message.payload));
    });
    this.client = client;
    await client.connect();
    await client.query(`LISTEN ${CHANNEL}`);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.retry !== null) clearTimeout(this.retry);
    const client = this.client;
    this.client = null;
    await client?.end().catch(() => undefined);
  }

  private lost(client: pg.Client): void {
    if (this.stopped || this.client !== client || this.retry !== null) return;
    this.client = null;
    client.end().catch(() => undefined);
    this.retry = setTimeout(() => void this.reconnect(), this.options.reconnectMs);
  }

  private async reconnect(): Promise<void> {
    this.retry = null;
    if (this.stopped) return;
    try {
      await this.start();
      const head = await this.head();
      if (!this.stopped) this.listener(head);
    } catch {
      const client = this.client;
      if (client !== null) this.lost(client);
      else if (!this.stopped && this.retry === null) this.retry = setTimeout(() => void this.reconnect(), this.options.reconnectMs);
    }
  }
}
