/**
 * The embedded mode's identity services answer synchronously (SQLite; identity-store.ts `Maybe`):
 * `sync(value)` and `synchronous(object)` say so to the type checker and throw if a promise comes
 * back, so the tests written for the embedded mode keep their shape and also check that it keeps
 * its speed.
 */
export function sync<T>(value: T | Promise<T>): T {
  if (value instanceof Promise) throw new Error('answered with a promise over the embedded store');
  return value;
}

type Synchronous<T> = {
  [K in keyof T]: T[K] extends (...args: infer A) => infer R ? (...args: A) => Exclude<R, Promise<unknown>> : T[K];
};

/** `target` with every method's answer checked by `sync` (for objects whose methods all answer `Maybe`). */
export function synchronous<T extends object>(target: T): Synchronous<T> {
  return new Proxy(target, {
    get(object, name, receiver) {
      const value = Reflect.get(object, name, receiver) as unknown;
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => sync((value as (...a: unknown[]) => unknown).apply(object, args));
    },
  }) as Synchronous<T>;
}
