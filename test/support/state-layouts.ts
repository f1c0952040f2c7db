/**
 * What the state layout manifest (src/core/snapshot/state-layout.ts) is made from: the fields of
 * every instance of a registered state class reachable from a root, per class, in the order they
 * first appear, and the registered classes no instance showed.
 */
import { STATE_SCHEMA } from '../../src/core/snapshot/state-classes.ts';

export interface ObservedLayouts {
  readonly layouts: Record<string, string[]>;
  readonly unseen: string[];
  readonly unregistered: string[];
}

export function observeLayouts(roots: readonly object[]): ObservedLayouts {
  const names = new Map<unknown, string>();
  for (const [name, ctor] of STATE_SCHEMA.classes) names.set(ctor, name);
  const layouts: Record<string, string[]> = {};
  const unregistered = new Set<string>();
  const seen = new Set<object>();
  const stack: unknown[] = [...roots];
  while (stack.length > 0) {
    const v = stack.pop();
    if (typeof v !== 'object' || v === null || seen.has(v)) continue;
    seen.add(v);
    if (v instanceof Map) {
      for (const [k, x] of v) stack.push(k, x);
      continue;
    }
    if (v instanceof Set || Array.isArray(v)) {
      for (const x of v) stack.push(x);
      continue;
    }
    if (ArrayBuffer.isView(v)) continue;
    const proto = Object.getPrototypeOf(v);
    if (proto !== Object.prototype && proto !== null) {
      const name = names.get(v.constructor);
      if (name === undefined) unregistered.add(v.constructor.name);
      else {
        const fields = (layouts[name] ??= []);
        for (const k of Object.keys(v)) if (!fields.includes(k)) fields.push(k);
      }
    }
    for (const k of Object.keys(v)) stack.push((v as Record<string, unknown>)[k]);
  }
  const unseen = [...STATE_SCHEMA.classes.keys()].filter((n) => layouts[n] === undefined);
  return { layouts, unseen, unregistered: [...unregistered] };
}
