/**
 * The clock commands are stamped with: the wall clock, without its steps.
 *
 * Time in the core decides when funding is paid and when dated contracts expire, irreversibly. A
 * forward step of the system clock while the service runs (a wrong NTP step, a clock set by hand)
 * would pay funding and expire contracts early. So the service clock follows the wall clock only
 * while the wall clock moves with the monotonic clock: within `maxStepMs` of where the monotonic
 * clock says it should be (which absorbs NTP's slewing, a fraction of a millisecond per second).
 * A larger difference is a step, and it is not taken: time runs on with the monotonic clock,
 * `onStep` reports the skew (wall minus service time) once per episode, and once more with 0 when
 * the two agree again. While the wall clock is ahead, a price source stamping its quotes with it
 * is ahead of the core by the skew, so its quotes are refused as future-dated: the index goes
 * stale and markets accept only orders that reduce risk until an operator has looked (a restart
 * adopts the wall clock as it then is). A backward step is never taken either: service time does
 * not go back.
 *
 * A step while the service is down cannot be told apart from the downtime: a forward one is taken
 * at restart. A backward one is not: recovery resumes service time from the journal's last time
 * when the wall clock is behind it (`resumeFrom`), and the difference is reported as a step. Were
 * the wall clock taken, the core (whose clock never goes back, `Exchange.execute`) would stamp
 * every command with the journal's last time until the wall clock caught up, and judge every price
 * stamped with the service clock stale on arrival: no mark, no orders that add risk, for as long
 * as the step.
 */
import type { Clock } from './sequencer.ts';

export class SteadyClock implements Clock {
  /** Wall and monotonic readings at the last time the wall clock was followed. */
  private wallAt: number;
  private monoAt: number;
  private last: number;
  private skew = 0;

  constructor(
    private readonly maxStepMs: number,
    private readonly onStep: (skewMs: number) => void,
    private readonly wall: () => number = Date.now,
    private readonly mono: () => number = () => performance.now(),
  ) {
    this.wallAt = wall();
    this.monoAt = mono();
    this.last = this.wallAt;
  }

  now(): number {
    const wall = this.wall();
    const mono = this.mono();
    const expected = this.wallAt + (mono - this.monoAt);
    const skew = wall - expected;
    let t: number;
    if (Math.abs(skew) <= this.maxStepMs) {
      this.wallAt = wall;
      this.monoAt = mono;
      t = wall;
      if (this.skew !== 0) this.report(0);
    } else {
      t = Math.floor(expected);
      if (this.skew === 0) this.report(Math.round(skew));
      else this.skew = Math.round(skew);
    }
    if (t > this.last) this.last = t;
    return this.last;
  }

  /**
   * Service time continues from `t` (the last time the journal holds) if the wall clock is behind
   * it; from the wall clock otherwise. Called once, after recovery, before anything is stamped.
   */
  resumeFrom(t: number): void {
    if (t <= this.last) return;
    this.wallAt = t;
    this.monoAt = this.mono();
    this.last = t;
  }

  /** Wall clock minus service time while a step is not taken; 0 while the wall clock is followed. */
  get skewMs(): number {
    return this.skew;
  }

  private report(skew: number): void {
    this.skew = skew;
    this.onStep(skew);
  }
}
