/**
 * The state image: the exchange's whole in-memory state as bytes, and back (docs/architecture.md
 * "Snapshots"). It walks the object graph from the root (the `Exchange`) and writes every object
 * once, in order of discovery, with references between them, so shared objects, cycles, insertion
 * order of maps and sets, bigints and floats all come back exactly; the same state always gives the
 * same bytes, which is what makes a state hash comparable between two replays.
 *
 * What is not state: the wiring a constructor sets up (closures over the engines, dependency
 * objects, the configuration). A snapshot is restored into a freshly constructed root:
 *   - anchors: objects at the same field path in a fresh root (the engines, the ledger, their
 *     dependency objects...) are reused, not allocated, so every closure that captured them keeps
 *     working; their functions are never written (the fresh ones stay);
 *   - configuration: objects reachable from the root's configuration are written as their path in
 *     it and resolved against the fresh root's, so a restart runs with the configuration it was
 *     started with (from the snapshot on, as for any command after a change of configuration);
 *   - interned values (ledger accounts) go back through their intern table, keeping identity, and
 *     module-level constants the code compares by identity (a tree's sentinel) are named, not copied.
 * Anything else that holds a function is refused loudly: state must live in fields, not closures.
 *
 * Classes are written by name and field list (state-classes.ts and the layout manifest,
 * state-layout.ts): an object of a class outside the manifest, or with a field the manifest does
 * not list, is refused when the image is written; an image whose class layout differs from the
 * code reading it is refused when it is read, so a snapshot never fills objects of a changed class.
 */
import { ByteReader, ByteWriter } from './bytes.ts';

/** Re-creates a value through its intern table (identity matters to its users). */
export interface Interner {
  readonly name: string;
  /** The parts that name the value, or null when `o` is not one of its values. */
  parts(o: object): readonly (string | number)[] | null;
  make(parts: readonly (string | number)[]): object;
}

export interface StateSchema {
  /** Classes whose instances may be state, by name. */
  readonly classes: ReadonlyMap<string, abstract new (...args: never[]) => unknown>;
  /** The fields of each class, in order (the layout manifest). */
  readonly layouts: Readonly<Record<string, readonly string[]>>;
  /** Fields of anchored objects that are wiring, kept from the fresh root and never written. */
  readonly wiring: Readonly<Record<string, readonly string[]>>;
  readonly interners: readonly Interner[];
  /** Module-level objects the code compares by identity (a tree's sentinel), by name: never copied. */
  readonly constants: ReadonlyMap<string, object>;
  /** The root's field that holds the configuration. */
  readonly configField: string;
}

export class StateImageError extends Error {}

type Path = (string | number)[];

// Value tags.
const T_UNDEFINED = 0, T_NULL = 1, T_FALSE = 2, T_TRUE = 3, T_INT = 4, T_FLOAT = 5, T_STRING = 6, T_STRING_REF = 7;
const T_BIGINT = 8, T_ABSENT = 9, T_REF = 10, T_NEW = 11, T_FUNCTION = 12, T_KEEP = 13;
// Kinds of a new object.
const K_CLASS = 0, K_PLAIN = 1, K_NULL_PROTO = 2, K_ARRAY = 3, K_MAP = 4, K_SET = 5, K_FLOAT64 = 6, K_INTERNED = 7, K_CONFIG = 8, K_CONSTANT = 9;
const FROZEN = 16;

const IMAGE_MAGIC = 0x53544931; // "STI1"

/** Writes the state reachable from `root`; `template` is a freshly constructed root (for the anchors). */
export function encodeState(root: object, template: object, schema: StateSchema): Uint8Array {
  return new ImageWriter(root, schema).write(template);
}

/** Restores an image written by `encodeState` into `fresh`, a freshly constructed root. */
export function restoreState(fresh: object, bytes: Uint8Array, schema: StateSchema): void {
  new ImageReader(fresh, bytes, schema).read();
}

const isCollection = (o: object) => o instanceof Map || o instanceof Set || Array.isArray(o) || ArrayBuffer.isView(o);

function kindOf(o: object): number {
  if (Array.isArray(o)) return K_ARRAY;
  if (o instanceof Map) return K_MAP;
  if (o instanceof Set) return K_SET;
  if (o instanceof Float64Array) return K_FLOAT64;
  const proto = Object.getPrototypeOf(o);
  if (proto === Object.prototype) return K_PLAIN;
  if (proto === null) return K_NULL_PROTO;
  return K_CLASS;
}

/** Objects reachable from `root` through fields, with their first path (depth first, fields in order). */
function fieldPaths(
  root: object,
  skip: (o: object, path: Path) => boolean,
  descend: (o: object) => boolean,
  follows: (o: object, key: string) => boolean = () => true,
): Map<object, Path> {
  const found = new Map<object, Path>();
  const stack: [object, Path][] = [[root, []]];
  while (stack.length > 0) {
    const [o, path] = stack.pop()!;
    if (found.has(o) || skip(o, path)) continue;
    found.set(o, path);
    if (!descend(o)) continue;
    const children: [object, Path][] = [];
    if (Array.isArray(o)) o.forEach((v, i) => isObject(v) && children.push([v, [...path, i]]));
    else if (!isCollection(o)) {
      for (const k of Object.keys(o)) {
        const v = (o as Record<string, unknown>)[k];
        if (isObject(v) && follows(o, k)) children.push([v, [...path, k]]);
      }
    }
    for (let i = children.length - 1; i >= 0; i--) stack.push(children[i]!);
  }
  return found;
}

const isObject = (v: unknown): v is object => typeof v === 'object' && v !== null;

function resolve(root: unknown, path: readonly (string | number)[]): unknown {
  let o = root;
  for (const step of path) {
    if (!isObject(o)) return undefined;
    o = (o as Record<string | number, unknown>)[step];
  }
  return o;
}

class ImageWriter {
  private readonly w = new ByteWriter();
  private readonly ids = new Map<object, number>();
  private readonly queue: object[] = [];
  private readonly anchored = new Set<object>();
  private readonly strings = new Map<string, number>();
  private readonly classIndex = new Map<string, number>();
  private readonly shapes = new Map<string, number>();
  private readonly config: Map<object, Path>;
  /** The registered name of each state class (never `constructor.name`, which a bundler may rename). */
  private readonly names = new Map<unknown, string>();
  private readonly constants = new Map<object, string>();
  /** What is being written, for error messages. */
  private where = '';

  constructor(private readonly root: object, private readonly schema: StateSchema) {
    const config = (root as Record<string, unknown>)[schema.configField];
    this.config = isObject(config) ? fieldPaths(config, () => false, (o) => !(o instanceof Map || o instanceof Set)) : new Map();
    for (const [name, ctor] of schema.classes) this.names.set(ctor, name);
    for (const [name, o] of schema.constants) this.constants.set(o, name);
  }

  private className(o: object): string {
    const name = this.names.get(o.constructor);
    if (name === undefined) throw new StateImageError(`${this.where}: class ${o.constructor.name} is not registered as state (core/snapshot/state-classes.ts)`);
    return name;
  }

  write(template: object): Uint8Array {
    const anchors = this.anchors(template);
    this.w.uint(IMAGE_MAGIC);
    this.w.uint(anchors.length);
    for (const [o, path] of anchors) {
      this.path(path);
      this.kind(o);
      this.register(o);
      this.anchored.add(o);
    }
    for (let i = 0; i < this.queue.length; i++) this.content(this.queue[i]!);
    return this.w.finish();
  }

  /** Objects of the live root at a field path where the fresh root has an object of the same kind. */
  private anchors(template: object): [object, Path][] {
    const skip = (o: object, path: Path) => {
      if (this.config.has(o) || this.constants.has(o) || this.interned(o) !== null) return true;
      const twin = resolve(template, path);
      return !isObject(twin) || kindOf(twin) !== kindOf(o) || (kindOf(o) === K_CLASS && twin.constructor !== o.constructor);
    };
    const notWiring = (o: object, key: string) => {
      const name = kindOf(o) === K_CLASS ? this.names.get(o.constructor) : undefined;
      return name === undefined || this.schema.wiring[name]?.includes(key) !== true;
    };
    return [...fieldPaths(this.root, skip, (o) => !isCollection(o), notWiring)];
  }

  private interned(o: object): [number, readonly (string | number)[]] | null {
    const list = this.schema.interners;
    for (let i = 0; i < list.length; i++) {
      const parts = list[i]!.parts(o);
      if (parts !== null) return [i, parts];
    }
    return null;
  }

  private register(o: object): void {
    this.ids.set(o, this.ids.size);
    this.queue.push(o);
  }

  private path(path: Path): void {
    this.w.uint(path.length);
    for (const step of path) this.value(step);
  }

  /** The kind of a new object (for a class: its index, defined with its layout on first use). */
  private kind(o: object): void {
    const kind = kindOf(o);
    const frozen = Object.isFrozen(o) && kind !== K_CLASS ? FROZEN : 0;
    this.w.uint(kind | frozen);
    if (kind === K_CLASS) this.classOf(o);
    else if (kind === K_PLAIN || kind === K_NULL_PROTO) this.shape(Object.keys(o));
    else if (kind === K_FLOAT64) this.w.uint((o as Float64Array).length);
  }

  private classOf(o: object): void {
    const name = this.className(o);
    let index = this.classIndex.get(name);
    if (index !== undefined) return this.w.uint(index);
    const fields = this.schema.layouts[name];
    if (fields === undefined) throw new StateImageError(`class ${name} is not in the state layout manifest (regenerate: scripts/state-layout.ts)`);
    index = this.classIndex.size;
    this.classIndex.set(name, index);
    this.w.uint(index);
    this.value(name);
    this.w.uint(fields.length);
    for (const f of fields) this.value(f);
  }

  private shape(keys: readonly string[]): void {
    const key = keys.join('\u0000');
    const index = this.shapes.get(key);
    if (index !== undefined) return this.w.uint(index);
    this.shapes.set(key, this.shapes.size);
    this.w.uint(this.shapes.size - 1);
    this.w.uint(keys.length);
    for (const k of keys) this.value(k);
  }

  private content(o: object): void {
    const kind = kindOf(o);
    const anchored = this.anchored.has(o);
    if (kind === K_CLASS) return this.classContent(o, anchored);
    if (kind === K_PLAIN || kind === K_NULL_PROTO) {
      this.where = 'a plain object';
      for (const k of Object.keys(o)) this.field(o, k, anchored);
    } else if (kind === K_ARRAY) {
      const a = o as unknown[];
      this.w.uint(a.length);
      for (let i = 0; i < a.length; i++) this.value(a[i]);
    } else if (kind === K_MAP) {
      this.w.uint((o as Map<unknown, unknown>).size);
      for (const [k, v] of o as Map<unknown, unknown>) {
        this.value(k);
        this.value(v);
      }
    } else if (kind === K_SET) {
      this.w.uint((o as Set<unknown>).size);
      for (const v of o as Set<unknown>) this.value(v);
    } else {
      const f = o as Float64Array;
      this.w.bytes(new Uint8Array(f.buffer, f.byteOffset, f.byteLength));
    }
  }

  private classContent(o: object, anchored: boolean): void {
    const name = this.className(o);
    const fields = this.schema.layouts[name]!;
    const keys = Object.keys(o);
    if (!sameKeys(keys, fields)) {
      for (const k of keys) if (!fields.includes(k)) throw new StateImageError(`field ${name}.${k} is not in the state layout manifest (regenerate: scripts/state-layout.ts)`);
    }
    const wiring = this.schema.wiring[name];
    for (const f of fields) {
      this.where = `${name}.${f}`;
      if (wiring?.includes(f)) {
        if (!anchored) throw new StateImageError(`${name}.${f} is wiring but the ${name} is not at its constructor's place`);
        this.w.byte(T_KEEP);
      } else if (!Object.hasOwn(o, f)) this.w.byte(T_ABSENT);
      else this.field(o, f, anchored);
    }
  }

  private field(o: object, key: string, anchored: boolean): void {
    this.value((o as Record<string, unknown>)[key], anchored);
  }

  private value(v: unknown, inAnchor = false): void {
    const w = this.w;
    switch (typeof v) {
      case 'undefined': return w.byte(T_UNDEFINED);
      case 'boolean': return w.byte(v ? T_TRUE : T_FALSE);
      case 'number':
        if (Number.isSafeInteger(v) && !Object.is(v, -0)) {
          w.byte(T_INT);
          return w.int(v);
        }
        w.byte(T_FLOAT);
        return w.float(v);
      case 'string': return this.string(v);
      case 'bigint':
        w.byte(T_BIGINT);
        return w.bigint(v);
      case 'function':
        if (!inAnchor) throw new StateImageError(`${this.where}: a function in the state outside the constructor's wiring (state must live in fields, not closures)`);
        return w.byte(T_FUNCTION);
      case 'object': return v === null ? w.byte(T_NULL) : this.object(v);
      default: throw new StateImageError(`${this.where}: a ${typeof v} cannot be state`);
    }
  }

  private string(s: string): void {
    const index = this.strings.get(s);
    if (index !== undefined) {
      this.w.byte(T_STRING_REF);
      return this.w.uint(index);
    }
    this.strings.set(s, this.strings.size);
    this.w.byte(T_STRING);
    this.w.string(s);
  }

  private object(o: object): void {
    const id = this.ids.get(o);
    if (id !== undefined) {
      this.w.byte(T_REF);
      return this.w.uint(id);
    }
    this.w.byte(T_NEW);
    const config = this.config.get(o);
    const constant = this.constants.get(o);
    const interned = config === undefined && constant === undefined ? this.interned(o) : null;
    if (constant !== undefined) {
      this.w.uint(K_CONSTANT);
      this.value(constant);
    } else if (config !== undefined) {
      this.w.uint(K_CONFIG);
      this.path(config);
    } else if (interned !== null) {
      this.w.uint(K_INTERNED);
      this.w.uint(interned[0]);
      this.w.uint(interned[1].length);
      for (const p of interned[1]) this.value(p);
    } else {
      this.kind(o);
      this.queue.push(o);
    }
    this.ids.set(o, this.ids.size);
  }
}

function sameKeys(keys: readonly string[], fields: readonly string[]): boolean {
  if (keys.length !== fields.length) return false;
  for (let i = 0; i < keys.length; i++) if (keys[i] !== fields[i]) return false;
  return true;
}

interface ClassDef {
  readonly name: string;
  readonly proto: object;
  readonly fields: readonly string[];
  readonly wiring: readonly string[];
}

interface Pending {
  readonly o: object;
  readonly kind: number;
  readonly anchored: boolean;
  readonly def: ClassDef | readonly string[] | null;
}

class ImageReader {
  private readonly r: ByteReader;
  private readonly objects: object[] = [];
  private readonly queue: Pending[] = [];
  private readonly strings: string[] = [];
  private readonly classes: ClassDef[] = [];
  private readonly shapes: (readonly string[])[] = [];
  private readonly claimed = new Set<object>();
  private readonly toFreeze: object[] = [];

  constructor(private readonly fresh: object, bytes: Uint8Array, private readonly schema: StateSchema) {
    this.r = new ByteReader(bytes);
  }

  read(): void {
    if (this.r.uint() !== IMAGE_MAGIC) throw new StateImageError('not a state image');
    const anchors = this.r.uint();
    for (let i = 0; i < anchors; i++) {
      const path = this.path();
      const { kind, def, frozen, length } = this.kind();
      const twin = resolve(this.fresh, path);
      const usable = isObject(twin) && kindOf(twin) === kind && !this.claimed.has(twin)
        && (kind !== K_CLASS || Object.getPrototypeOf(twin) === (def as ClassDef).proto);
      if (usable) {
        this.claimed.add(twin);
        clear(twin);
        this.add(twin, kind, true, def, false);
      } else this.add(this.allocate(kind, def, length), kind, false, def, frozen);
    }
    for (let i = 0; i < this.queue.length; i++) this.content(this.queue[i]!);
    if (!this.r.done) throw new StateImageError('state image: bytes after the last object');
    for (const o of this.toFreeze) Object.freeze(o);
  }

  private add(o: object, kind: number, anchored: boolean, def: Pending['def'], frozen: boolean): void {
    this.objects.push(o);
    this.queue.push({ o, kind, anchored, def });
    if (frozen) this.toFreeze.push(o);
  }

  private path(): (string | number)[] {
    const n = this.r.uint();
    const out: (string | number)[] = [];
    for (let i = 0; i < n; i++) out.push(this.value() as string | number);
    return out;
  }

  private kind(): { kind: number; def: Pending['def']; frozen: boolean; length: number } {
    const head = this.r.uint();
    const kind = head & ~FROZEN;
    const frozen = (head & FROZEN) !== 0;
    let def: Pending['def'] = null;
    let length = 0;
    if (kind === K_CLASS) def = this.classDef();
    else if (kind === K_PLAIN || kind === K_NULL_PROTO) def = this.shape();
    else if (kind === K_FLOAT64) length = this.r.uint();
    return { kind, def, frozen, length };
  }

  private classDef(): ClassDef {
    const index = this.r.uint();
    if (index < this.classes.length) return this.classes[index]!;
    if (index !== this.classes.length) throw new StateImageError('state image: class table out of order');
    const name = this.value() as string;
    const n = this.r.uint();
    const fields: string[] = [];
    for (let i = 0; i < n; i++) fields.push(this.value() as string);
    const ctor = this.schema.classes.get(name);
    const layout = this.schema.layouts[name];
    if (ctor === undefined || layout === undefined || !sameKeys(fields, layout)) {
      throw new StateImageError(`the snapshot's class ${name} (${fields.join(', ')}) does not match this code's layout`);
    }
    const def = { name, proto: ctor.prototype as object, fields, wiring: this.schema.wiring[name] ?? [] };
    this.classes.push(def);
    return def;
  }

  private shape(): readonly string[] {
    const index = this.r.uint();
    if (index < this.shapes.length) return this.shapes[index]!;
    const n = this.r.uint();
    const keys: string[] = [];
    for (let i = 0; i < n; i++) keys.push(this.value() as string);
    this.shapes.push(keys);
    return keys;
  }

  private allocate(kind: number, def: Pending['def'], length: number): object {
    switch (kind) {
      case K_CLASS: return Object.create((def as ClassDef).proto) as object;
      case K_PLAIN: return {};
      case K_NULL_PROTO: return Object.create(null) as object;
      case K_ARRAY: return [];
      case K_MAP: return new Map();
      case K_SET: return new Set();
      case K_FLOAT64: return new Float64Array(length);
      default: throw new StateImageError(`state image: unknown object kind ${kind}`);
    }
  }

  private content(p: Pending): void {
    const o = p.o as Record<string, unknown>;
    if (p.kind === K_CLASS) {
      const def = p.def as ClassDef;
      for (const f of def.fields) this.assign(o, f, p.anchored, `${def.name}.${f}`);
    } else if (p.kind === K_PLAIN || p.kind === K_NULL_PROTO) {
      for (const k of p.def as readonly string[]) this.assign(o, k, p.anchored, k);
    } else if (p.kind === K_ARRAY) {
      const a = p.o as unknown[];
      const n = this.r.uint();
      for (let i = 0; i < n; i++) a.push(this.value());
    } else if (p.kind === K_MAP) {
      const m = p.o as Map<unknown, unknown>;
      const n = this.r.uint();
      for (let i = 0; i < n; i++) {
        const k = this.value();
        m.set(k, this.value());
      }
    } else if (p.kind === K_SET) {
      const s = p.o as Set<unknown>;
      const n = this.r.uint();
      for (let i = 0; i < n; i++) s.add(this.value());
    } else {
      const f = p.o as Float64Array;
      new Uint8Array(f.buffer, f.byteOffset, f.byteLength).set(this.r.bytes(f.byteLength));
    }
  }

  /** Sets one field; a function or wiring field keeps the fresh root's value. */
  private assign(o: Record<string, unknown>, key: string, anchored: boolean, where: string): void {
    const tag = this.r.byte();
    if (tag === T_ABSENT) {
      delete o[key];
    } else if (tag === T_KEEP || tag === T_FUNCTION) {
      if (!anchored || (tag === T_FUNCTION && typeof o[key] !== 'function')) {
        throw new StateImageError(`${where}: the snapshot keeps wiring the fresh state does not have here`);
      }
    } else o[key] = this.tagged(tag);
  }

  private value(): unknown {
    return this.tagged(this.r.byte());
  }

  private tagged(tag: number): unknown {
    const r = this.r;
    switch (tag) {
      case T_UNDEFINED: return undefined;
      case T_NULL: return null;
      case T_FALSE: return false;
      case T_TRUE: return true;
      case T_INT: return r.int();
      case T_FLOAT: return r.float();
      case T_STRING: {
        const s = r.string();
        this.strings.push(s);
        return s;
      }
      case T_STRING_REF: return this.strings[r.uint()];
      case T_BIGINT: return r.bigint();
      case T_REF: {
        const o = this.objects[r.uint()];
        if (o === undefined) throw new StateImageError('state image: reference to an unknown object');
        return o;
      }
      case T_NEW: return this.newObject();
      default: throw new StateImageError(`state image: unknown value tag ${tag}`);
    }
  }

  private newObject(): object {
    const head = this.r.uint();
    if (head === K_CONFIG) {
      const path = this.path();
      const o = resolve((this.fresh as Record<string, unknown>)[this.schema.configField], path);
      if (!isObject(o)) throw new StateImageError(`the snapshot refers to configuration ${path.join('.')} this configuration does not have`);
      this.objects.push(o);
      return o;
    }
    if (head === K_CONSTANT) {
      const name = this.value() as string;
      const o = this.schema.constants.get(name);
      if (o === undefined) throw new StateImageError(`the snapshot refers to a constant ${name} this code does not have`);
      this.objects.push(o);
      return o;
    }
    if (head === K_INTERNED) {
      const interner = this.schema.interners[this.r.uint()];
      const n = this.r.uint();
      const parts: (string | number)[] = [];
      for (let i = 0; i < n; i++) parts.push(this.value() as string | number);
      if (interner === undefined) throw new StateImageError('state image: unknown interned value');
      const o = interner.make(parts);
      this.objects.push(o);
      return o;
    }
    const kind = head & ~FROZEN;
    let def: Pending['def'] = null;
    let length = 0;
    if (kind === K_CLASS) def = this.classDef();
    else if (kind === K_PLAIN || kind === K_NULL_PROTO) def = this.shape();
    else if (kind === K_FLOAT64) length = this.r.uint();
    const o = this.allocate(kind, def, length);
    this.add(o, kind, false, def, (head & FROZEN) !== 0);
    return o;
  }
}

/** Empties an anchored collection before the snapshot's content fills it. */
function clear(o: object): void {
  if (o instanceof Map || o instanceof Set) o.clear();
  else if (Array.isArray(o)) o.length = 0;
}
