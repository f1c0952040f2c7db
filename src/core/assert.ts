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

/**
 * Fails an invariant whose message names the values involved: `if (balance < 0n) fail(\`... ${balance}\`)`.
 * A template literal passed to assert() is built on every call, failing or not (a bigint's digits,
 * on every ledger move); behind the `if` it is built only when the invariant breaks.
 */
export function fail(message: string): never {
  throw new InvariantError(message);
}
