/**
 * The state image codec on a small object graph of its own: everything comes back exactly (shared
 * objects, cycles, insertion order, bigints, -0 and NaN, typed arrays, frozen records), anchored
 * objects and their closures are the fresh root's, configuration and interned values keep their
 * identity, and what cannot be restored exactly is refused loudly.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { encodeState, restoreState, StateImageError, type StateSchema } from './state-image.ts';

class Node {
  next: Node | null = null;
  constructor(readonly value: bigint, readonly tags = new Set<string>()) {}
}

class Engine {
  readonly nodes = new Map<Node, number>();
  readonly byName = new Map<string, Node>();
  readonly config: { limit: number };
  readonly deps: { now: () => number; tick: number };
  readonly scratch = new Float64Array(3);
  count = 0;
  optional?: string;
  constructor(config: { limit: number }, clock: { t: number }) {
    this.config = config;
    this.deps = { now: () => clock.t, tick: 0 };
  }
}

class Root {
  readonly engine: Engine;
  readonly clock = { t: 0 };
  readonly wired = new Map<string, () => number>();
  history: unknown[] = [];
  constructor(readonly config: { limit: number; name: string }) {
    this.engine = new Engine(config, this.clock);
    this.wired.set('now', () => this.clock.t);
  }
}

const SENTINEL = new Node(0n);
const INTERNED = new Map<string, { key: string }>();
const intern = (key: string) => {
  let v = INTERNED.get(key);
  if (v === undefined) INTERNED.set(key, (v = Object.freeze({ key })));
  return v;
};

const schema: StateSchema = {
  classes: new Map<string, abstract new (...args: never[]) => unknown>([['Root', Root], ['Engine', Engine], ['Node', Node]]),
  layouts: {
    Root: ['config', 'engine', 'clock', 'wired', 'history'],
    Engine: ['nodes', 'byName', 'config', 'deps', 'scratch', 'count', 'optional'],
    Node: ['value', 'tags', 'next'],
  },
  wiring: { Root: ['wired'] },
  interners: [{
    name: 'interned',
    parts: (o) => (INTERNED.get((o as { key?: string }).key ?? '') === o ? [(o as { key: string }).key] : null),
    make: (parts) => intern(parts[0] as string),
  }],
  configField: 'config',
  constants: new Map([['SENTINEL', SENTINEL]]),
};

function populated(): Root {
  const root = new Root({ limit: 5, name: 'venue' });
  const a = new Node(10n ** 30n, new Set(['x', 'y']));
  const b = new Node(-7n);
  a.next = b;
  b.next = a; // a cycle
  root.engine.nodes.set(b, 2).set(a, 1);
  root.engine.byName.set('a', a).set('b', b);
  root.engine.count = 42;
  root.engine.deps.tick = 9;
  root.engine.scratch.set([1.5, -0, Number.NaN]);
  root.clock.t = 1234;
  root.history = [SENTINEL, a, { price: 1.25, zero: -0, big: -(2n ** 70n), none: null, gone: undefined }, Object.freeze({ frozen: true }), intern('k'), root.config];
  return root;
}

const fresh = () => new Root({ limit: 5, name: 'venue' });

describe('state image', () => {
  test('a restored state encodes to the same bytes and keeps every value exactly', () => {
    const live = populated();
    const bytes = encodeState(live, fresh(), schema);
    const target = fresh();
    const wiredBefore = target.wired;
    const nowBefore = target.engine.deps.now;
    restoreState(target, bytes, schema);
    assert.deepEqual(encodeState(target, fresh(), schema), bytes);

    const [a, b] = [...target.engine.byName.values()];
    assert.equal(a!.next, b);
    assert.equal(b!.next, a);
    assert.deepEqual([...target.engine.nodes.values()], [2, 1]);
    assert.equal([...target.engine.nodes.keys()][0], b);
    assert.equal(a!.value, 10n ** 30n);
    assert.deepEqual([...a!.tags], ['x', 'y']);
    assert.ok(a instanceof Node);
    assert.equal(target.history[0], SENTINEL, 'constants keep their identity');
    const record = target.history[2] as Record<string, unknown>;
    assert.ok(Object.is(record.zero, -0));
    assert.equal(record.big, -(2n ** 70n));
    assert.ok('gone' in record && record.gone === undefined);
    assert.ok(Object.isFrozen(target.history[3]));
    assert.equal(target.history[4], intern('k'), 'interned values keep their identity');
    assert.equal(target.history[5], target.config, 'configuration is the fresh root\'s');
    assert.ok(Object.is(target.engine.scratch[1], -0) && Number.isNaN(target.engine.scratch[2]));
    assert.equal(target.engine.optional, undefined);
    assert.ok(!('optional' in target.engine) || target.engine.optional === undefined);
    // Anchors and their closures are the fresh root's, and read the restored state.
    assert.equal(target.wired, wiredBefore, 'wiring fields are kept');
    assert.equal(target.engine.deps.now, nowBefore);
    assert.equal(target.engine.deps.now(), 1234);
    assert.equal(target.wired.get('now')!(), 1234);
    assert.equal(target.engine.deps.tick, 9);
  });

  test('the configuration comes from the fresh root, not the snapshot', () => {
    const bytes = encodeState(populated(), fresh(), schema);
    const target = new Root({ limit: 7, name: 'venue' });
    restoreState(target, bytes, schema);
    assert.equal(target.engine.config.limit, 7);
    assert.equal(target.engine.config, target.config);
  });

  test('a function outside the wiring is refused', () => {
    const live = populated();
    live.history.push({ callback: () => 1 });
    assert.throws(() => encodeState(live, fresh(), schema), StateImageError);
  });

  test('an unregistered class and a field outside the layout are refused', () => {
    class Stray {}
    const live = populated();
    live.history.push(new Stray());
    assert.throws(() => encodeState(live, fresh(), schema), /not registered/);
    const other = populated();
    (other.engine as unknown as Record<string, unknown>).extra = 1;
    assert.throws(() => encodeState(other, fresh(), schema), /not in the state layout/);
  });

  test('an image is refused by code whose class layout differs', () => {
    const bytes = encodeState(populated(), fresh(), schema);
    const changed = { ...schema, layouts: { ...schema.layouts, Node: ['value', 'tags', 'next', 'weight'] } };
    assert.throws(() => restoreState(fresh(), bytes, changed), /does not match this code's layout/);
  });

  test('a truncated image is refused', () => {
    const bytes = encodeState(populated(), fresh(), schema);
    assert.throws(() => restoreState(fresh(), bytes.subarray(0, bytes.length - 3), schema), RangeError);
  });
});
