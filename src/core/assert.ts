/**
 * Invariant assertions for the core. A failed assertion is our bug, never a user mistake: it throws
 * an InvariantError, which the gateway treats as fatal (fail-stop: the process exits and restarts
 * from the journal rather than continue with state that may have lost money). User mistakes are
 * returned as rejection values, never thrown.
 */

export class InvariantError extends Error {
  override name = 'InvariantError';
}

export function assert(condition: unknown, message: string): asserts condition {
  if (!condition) throw new InvariantError(message);
}
