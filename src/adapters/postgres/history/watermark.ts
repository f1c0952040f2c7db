/**
 * How far the PostgreSQL history has been projected, as a gateway asks it before every history
 * read (its history barrier waits until the watermark reaches what was acknowledged). Asking the
 * database each time would cost a round trip per read and per poll; instead a connection of its
 * own LISTENs `history_watermark`, which every projection commit notifies with its new watermark
 * (projector.ts), and the answer comes from memory. A notification is delivered only once its
 * transaction is committed and visible, so a read that follows sees the rows it announces.
 *
 * Notifications sent while the connection is down are lost: until it is back (reconnecting every
 * `reconnectMs`) and has read the table once after LISTEN, answers are read from the table, one
 * query in flight serving every caller that arrives meanwhile.
 */
import pg from 'pg';
import { HISTORY_WATERMARK_CHANNEL } from './projector.ts';

export interface PgHistoryWatermarkOptions {
  /** How long the LISTEN connection waits before it reconnects after losing its server (ms). */
  readonly reconnectMs?: number;
  /** Connect and query timeout of the LISTEN connection (ms). */
  readonly timeoutMs?: number;
}

export class PgHistoryWatermark {
  /** The highest watermark notified or read. */
  private known = 0;
  /** True while the LISTEN connection is up and `known` was read after its LISTEN. */
  private current = false;
  private client: pg.Client | null = null;
  private retry: NodeJS.Timeout | null = null;
  private stopped = false;
  private reading: Promise<number> | null = null;
  private readonly reconnectMs: number;
  private readonly timeoutMs: number;

  constructor(
    private readonly url: string,
    /** Reads the table while the LISTEN connection is down. */
    private readonly pool: pg.Pool,
    options: PgHistoryWatermarkOptions = {},
  ) {
    this.reconnectMs = options.reconnectMs ?? 1_000;
    this.timeoutMs = options.timeoutMs ?? 5_000;
  }

  /** Connects and listens; if PostgreSQL is away, keeps trying in the background (reads go to the table meanwhile). */
  async start(): Promise<void> {
    try {
      await this.listen();
    } catch {
      this.lost(this.client);
    }
  }

  /** The last seq whose events are in the history tables (never less than a value returned before). */
  async projectedSeq(): Promise<number> {
    if (this.current) return this.known;
    this.reading ??= this.read().finally(() => (this.reading = null));
    return this.reading;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.current = false;
    if (this.retry !== null) clearTimeout(this.retry);
    const client = this.client;
    this.client = null;
    await client?.end().catch(() => undefined);
  }

  private async read(): Promise<number> {
    const { rows } = await this.pool.query<{ projected_seq: string }>('SELECT projected_seq FROM history_watermark WHERE id = 1');
    return this.raise(Number(rows[0]!.projected_seq));
  }

  private raise(seq: number): number {
    if (seq > this.known) this.known = seq;
    return this.known;
  }

  private async listen(): Promise<void> {
    const client = new pg.Client({
      connectionString: this.url, connectionTimeoutMillis: this.timeoutMs, query_timeout: this.timeoutMs,
      keepAlive: true, application_name: 'exchange-history-watermark',
    });
    this.client = client;
    client.on('error', () => this.lost(client));
    client.on('end', () => this.lost(client));
    client.on('notification', (message) => {
      if (message.channel === HISTORY_WATERMARK_CHANNEL && message.payload !== undefined) this.raise(Number(message.payload));
    });
    await client.connect();
    await client.query(`LISTEN ${HISTORY_WATERMARK_CHANNEL}`);
    // Read after LISTEN: every commit from here on is notified, every one before is in the table.
    const { rows } = await client.query<{ projected_seq: string }>('SELECT projected_seq FROM history_watermark WHERE id = 1');
    this.raise(Number(rows[0]!.projected_seq));
    if (this.client === client && !this.stopped) this.current = true;
  }

  private lost(client: pg.Client | null): void {
    if (this.stopped || this.client !== client || this.retry !== null) return;
    this.current = false;
    this.client = null;
    client?.end().catch(() => undefined);
    this.retry = setTimeout(() => void this.reconnect(), this.reconnectMs);
  }

  private async reconnect(): Promise<void> {
    this.retry = null;
    if (this.stopped) return;
    try {
      await this.listen();
    } catch {
      if (this.client !== null) this.lost(this.client);
      else if (!this.stopped && this.retry === null) this.retry = setTimeout(() => void this.reconnect(), this.reconnectMs);
    }
  }
}
