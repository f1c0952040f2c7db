/**
 * What the cluster benchmarks (order-entry.ts, fanout.ts) share: a process's CPU time read from
 * /proc (utime + stime, and for a server that forks per connection, its children's), a watched
 * set of processes snapshotted before and after a measured window, the deployment's processes by
 * role, and the machine's load average (the figures of a shared 2-core machine need it beside them).
 */
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import os from 'node:os';
import type { Cluster } from '../../test/support/cluster.ts';

const TICKS_PER_SECOND = Number(execFileSync('getconf', ['CLK_TCK']).toString().trim()) || 100;

/** The fields of /proc/<pid>/stat after the command name (which may hold spaces), from `state` on. */
function statFields(pid: number): string[] | null {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return text.slice(text.lastIndexOf(')') + 2).split(' ');
  } catch {
    return null;
  }
}

/** CPU seconds a process has used (utime + stime); with `reaped`, also its waited-for children's. */
export function processCpuSeconds(pid: number, reaped = false): number {
  const f = statFields(pid);
  if (f === null) return 0;
  // From `state` (field 3 of stat(5)): utime is field 14, stime 15, cutime 16, cstime 17.
  const own = Number(f[11]) + Number(f[12]);
  return (reaped ? own + Number(f[13]) + Number(f[14]) : own) / TICKS_PER_SECOND;
}

/** The live children of a process (scanning /proc: PostgreSQL's backends are the postmaster's). */
export function childPids(pid: number): number[] {
  const children: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const f = statFields(Number(entry));
    if (f !== null && Number(f[1]) === pid) children.push(Number(entry));
  }
  return children;
}

/**
 * A server and its backends: the postmaster's own time, the time of backends that exited (reaped,
 * hence in its cutime/cstime), and every live backend's time.
 */
export function processTreeCpuSeconds(pid: number): number {
  return childPids(pid).reduce((sum, child) => sum + processCpuSeconds(child, true), processCpuSeconds(pid, true));
}

export interface WatchedProcess {
  readonly name: string;
  readonly pid: number;
  /** CPU seconds so far. */
  cpu(): number;
}

export function watchNode(name: string, pid: number): WatchedProcess {
  return { name, pid, cpu: () => processCpuSeconds(pid) };
}

/** The deployment's processes: gateways, the leader, the standbys, the projector, postgres, nats. */
export async function clusterProcesses(cluster: Cluster): Promise<WatchedProcess[]> {
  const leader = await cluster.leader();
  const watched = cluster.gateways.map((g, i) => watchNode(`gateway-${i}`, g.child!.pid!));
  let standby = 0;
  for (const core of cluster.cores) {
    if (core.child === null) continue;
    watched.push(watchNode(core === leader ? 'leader core' : `standby core${cluster.cores.length > 2 ? `-${standby}` : ''}`, core.child.pid!));
    if (core !== leader) standby++;
  }
  if (cluster.projector?.child) watched.push(watchNode('projector', cluster.projector.child.pid!));
  const pgPid = cluster.postgres.pid()!;
  watched.push({ name: 'postgres (all backends)', pid: pgPid, cpu: () => processTreeCpuSeconds(pgPid) });
  watched.push(watchNode('nats-server', cluster.nats.pid()!));
  return watched;
}

/** CPU seconds of each watched process, by name. */
export function cpuSnapshot(watched: readonly WatchedProcess[]): Map<string, number> {
  return new Map(watched.map((w) => [w.name, w.cpu()]));
}

/**
 * CPU seconds the whole machine spent busy (every process, ours and others'), from /proc/stat:
 * user, nice, system, irq, softirq and steal over all cores.
 */
export function machineBusySeconds(): number {
  const f = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number);
  return (f[0]! + f[1]! + f[2]! + f[5]! + f[6]! + f[7]!) / TICKS_PER_SECOND;
}

export const MACHINE = 'machine (every process)';

/** The whole machine as a watched "process", to show how much of it others took. */
export function watchMachine(): WatchedProcess {
  return { name: MACHINE, pid: 0, cpu: machineBusySeconds };
}

export function loadAverage(): string {
  return os.loadavg().map((l) => l.toFixed(2)).join(' ');
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** The p-quantile of samples in a histogram of `bucketMs`-wide buckets, in ms. */
export function quantileMs(hist: readonly number[], bucketMs: number, p: number): number {
  const total = hist.reduce((s, c) => s + c, 0);
  if (total === 0) return NaN;
  const target = Math.ceil(total * p);
  let seen = 0;
  for (let i = 0; i < hist.length; i++) {
    seen += hist[i]!;
    if (seen >= target) return +(i * bucketMs).toFixed(3);
  }
  return +((hist.length - 1) * bucketMs).toFixed(3);
}
