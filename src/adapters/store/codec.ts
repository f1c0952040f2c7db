/**
 * Journal codec: commands and events are JSON with exact bigints. A bigint is written as
 * `{"$n":"<decimal digits>"}`, an object no client input can produce (the gateway never passes
 * objects of that shape into a command), and read back to the same bigint.
 */

export function encode(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) => (typeof v === 'bigint' ? { $n: v.toString() } : v));
}

export function decode<T>(text: string): T {
  return JSON.parse(text, (_key, v: unknown) => {
    if (v !== null && typeof v === 'object' && !Array.isArray(v)) {
      const n = (v as { $n?: unknown }).$n;
      if (typeof n === 'string' && Object.keys(v).length === 1) return BigInt(n);
    }
    return v;
  }) as T;
}
