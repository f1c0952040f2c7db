/**
 * The start of a server the tests run as a child process (test/support/postgres.ts, nats.ts): its
 * output is kept, so that a server which exits or cannot be spawned fails the start with its reason.
 */
import type { ChildProcess } from 'node:child_process';
import { waitFor } from './harness.ts';

/**
 * Waits until `ready` (given the child's output so far) holds, checking every `stepMs`; fails at
 * once if `name` exits or cannot be spawned first, with the end of its output.
 */
export async function awaitServerReady(
  name: string,
  child: ChildProcess,
  ready: (output: string) => Promise<boolean>,
  timeoutMs: number,
  stepMs: number,
): Promise<void> {
  const output: string[] = [];
  const keep = (chunk: Buffer) => output.push(chunk.toString());
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  let failed: string | null = null;
  child.once('exit', (code) => (failed = `exited with ${code ?? -1}`));
  child.once('error', (error) => (failed = `could not be spawned (${String(error)})`));
  await waitFor(async () => {
    if (failed !== null) throw new Error(`${name} ${failed}: ${output.join('').slice(-2000)}`);
    return ready(output.join(''));
  }, timeoutMs, stepMs);
}
