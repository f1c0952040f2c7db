/**
 * The clock port's driver: submits `clock.tick` every `periodMs`, so time-driven work (listings,
 * index TWAP samples, marks, triggers, and later funding and expiry) happens inside the sequenced
 * core at a journaled time. A tick is skipped while the previous one is still being committed.
 */
import type { Sequencer } from './sequencer.ts';

export class Ticker {
  private timer: NodeJS.Timeout | null = null;
  private inFlight = false;

  constructor(
    private readonly sequencer: Sequencer,
    private readonly periodMs: number,
    private readonly onError: (error: unknown) => void,
  ) {}

  start(): void {
    if (this.timer !== null) return;
    void this.tick();
    this.timer = setInterval(() => void this.tick(), this.periodMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
  }

  async tick(): Promise<void> {
    if (this.inFlight || !this.sequencer.isHealthy()) return;
    this.inFlight = true;
    try {
      await this.sequencer.submit({ type: 'clock.tick' });
    } catch (error) {
      this.onError(error);
    } finally {
      this.inFlight = false;
    }
  }
}
