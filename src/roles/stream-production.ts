/**
 * Which gateway produces the streams (docs/deploy.md "Streams across gateways"): every gateway
 * runs the views over its replica, and the one holding the stream producer's lease (a PostgreSQL
 * advisory lock of its own, adapters/postgres/leader-lease.ts) serves the relay's joins for all of
 * them. When it stops or loses its lease, another gateway takes the lease within a poll and
 * produces under a new epoch; the streams of the old one end (retryable) and their clients
 * reconnect, to a snapshot.
 */
import { randomInt } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { NatsConnection } from '@nats-io/transport-node';
import { StreamProducer } from '../adapters/nats/stream-producer.ts';
import { LeaderLease } from '../adapters/postgres/leader-lease.ts';
import type { StreamHub } from '../gateway/streams/hub.ts';

/** The producer lease's advisory-lock key: "streams" in ASCII. */
export const STREAM_LOCK_KEY = 0x73747265616d73n;
/** Between attempts to take the lease while another gateway holds it. */
const POLL_MS = 250;

export interface ProductionLog {
  info(message: string, detail?: object): void;
  error(message: string, detail?: object): void;
}

export class StreamProduction {
  private readonly abort = new AbortController();
  private producer: StreamProducer | null = null;
  private lease: LeaderLease | null = null;
  private running: Promise<void> | null = null;

  constructor(
    private readonly databaseUrl: string,
    private readonly nc: NatsConnection,
    private readonly hub: StreamHub,
    /** This gateway's name for operators (pg_stat_activity shows it). */
    private readonly name: string,
    private readonly log: ProductionLog,
  ) {}

  /** Starts competing for the lease (the views must already be seeded). */
  start(): void {
    this.running ??= this.run();
  }

  async stop(): Promise<void> {
    this.abort.abort(new Error('stopping'));
    await this.producer?.stop('this gateway is shutting down; reconnect');
    await this.lease?.release();
    await this.running?.catch(() => undefined);
  }

  private async run(): Promise<void> {
    const signal = this.abort.signal;
    while (!signal.aborted) {
      const lease = new LeaderLease(this.databaseUrl, { other: { lockKey: STREAM_LOCK_KEY, applicationName: `exchange-stream-producer ${this.name}` } });
      this.lease = lease;
      try {
        await lease.acquire(this.name, { pollMs: POLL_MS, signal });
      } catch (error) {
        if (signal.aborted) return;
        this.log.error('stream producer lease: cannot take it; trying again', { error: String(error) });
        await sleep(1_000, undefined, { signal }).catch(() => undefined);
        continue;
      }
      const lost = new Promise<Error>((resolve) => lease.onLost(resolve));
      const producer = new StreamProducer(this.nc, this.hub, {
        epoch: randomInt(1, 0xffff_ffff),
        report: (error, message) => this.log.error(message, { error: String(error) }),
      });
      this.producer = producer;
      producer.start();
      this.log.info('this gateway produces the streams of every gateway', { epoch: producer.epoch });
      const ended = await Promise.race([lost, new Promise<null>((resolve) => signal.addEventListener('abort', () => resolve(null), { once: true }))]);
      if (ended === null) return;
      this.log.error('stream producer lease lost; the relayed streams end and another gateway takes over', { error: ended.message });
      this.producer = null;
      await producer.stop('the stream producer lost its lease; reconnect');
      await lease.release();
    }
  }
}
