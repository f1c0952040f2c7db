/**
 * SteadyClock with a wall clock and a monotonic clock the test moves: it follows the wall clock
 * through slewing, does not take a step either way (reporting it once, and its end), and never goes
 * back.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SteadyClock } from './steady-clock.ts';

const T0 = Date.UTC(2026, 10, 23, 12, 0, 0);
const HOUR = 3_600_000;

function rig(maxStepMs = 5000) {
  const time = { wall: T0, mono: 1000.25 };
  const reports: number[] = [];
  const clock = new SteadyClock(maxStepMs, (skew) => reports.push(skew), () => time.wall, () => time.mono);
  /** Real time passes: both clocks move by `ms`, the wall clock by `drift` more. */
  const pass = (ms: number, drift = 0) => {
    time.wall += ms + drift;
    time.mono += ms;
  };
  return { time, reports, clock, pass };
}

test('it is the wall clock while the wall clock moves with real time, slewing included', () => {
  const { clock, pass, reports } = rig();
  assert.equal(clock.now(), T0);
  for (let i = 0; i < 3600; i++) pass(1000, 1); // NTP slewing a second over an hour
  assert.equal(clock.now(), T0 + HOUR + 3600);
  assert.deepEqual(reports, []);
  assert.equal(clock.skewMs, 0);
});

test('a forward step is not taken: time runs on with real time, the step is reported once, then its end', () => {
  const { clock, pass, reports, time } = rig();
  pass(1000);
  assert.equal(clock.now(), T0 + 1000);
  time.wall += 24 * HOUR; // the system clock jumps a day ahead
  pass(500);
  // Before: T0 + 1 500 + a day, which expired contracts and paid funding a day early.
  assert.equal(clock.now(), T0 + 1500);
  pass(500);
  assert.equal(clock.now(), T0 + 2000);
  assert.deepEqual(reports, [24 * HOUR], 'reported once');
  assert.equal(clock.skewMs, 24 * HOUR);
  time.wall -= 24 * HOUR; // the step is undone
  pass(1000);
  assert.equal(clock.now(), T0 + 3000);
  assert.deepEqual(reports, [24 * HOUR, 0]);
  assert.equal(clock.skewMs, 0);
});

test('a step within the tolerance is taken; time never goes back', () => {
  const { clock, pass, time, reports } = rig(5000);
  pass(1000);
  time.wall += 4000;
  assert.equal(clock.now(), T0 + 5000, 'a 4 s step is within the 5 s tolerance');
  time.wall -= 3000;
  assert.equal(clock.now(), T0 + 5000, 'a small step back holds time where it was');
  pass(2500);
  assert.equal(clock.now(), T0 + 5000, 'until the wall clock passes it');
  pass(1000);
  assert.equal(clock.now(), T0 + 5500);
  time.wall -= HOUR; // a large step back: not taken, real time goes on
  pass(1000);
  assert.equal(clock.now(), T0 + 6500);
  assert.deepEqual(reports, [-HOUR]);
});

test('a stall of the process is not a step: both clocks moved', () => {
  const { clock, pass, reports } = rig(1000);
  clock.now();
  pass(30_000); // a 30 s pause (stopped process, long collection): the monotonic clock moved too
  assert.equal(clock.now(), T0 + 30_000);
  assert.deepEqual(reports, []);
});

test('after recovery behind the journal: time resumes from the journal\'s last time, reported as a step, until the wall clock catches up', () => {
  const { clock, pass, reports } = rig();
  // The wall clock was set back an hour while the service was down: the journal ends at T0 + 1 h.
  clock.resumeFrom(T0 + HOUR);
  assert.equal(clock.now(), T0 + HOUR, 'not the wall clock, an hour behind the journal');
  pass(1000);
  assert.equal(clock.now(), T0 + HOUR + 1000, 'runs on with real time');
  assert.deepEqual(reports, [-HOUR]);
  assert.equal(clock.skewMs, -HOUR);
  pass(1000, HOUR); // the operator puts the wall clock right
  assert.equal(clock.now(), T0 + HOUR + 2000);
  assert.deepEqual(reports, [-HOUR, 0]);
});

test('after recovery with the wall clock ahead of the journal (downtime): the wall clock', () => {
  const { clock, reports } = rig();
  clock.resumeFrom(T0 - HOUR);
  assert.equal(clock.now(), T0);
  assert.deepEqual(reports, []);
});
