// IR nodes: immutable and hash-consed, so structurally equal expressions are one object,
// common subexpressions merge as they are built, and `key` is the compile-cache key.
// (tinygrad's UOp cache, PyTensor's __props__.)
import { NDArray, formatShape } from './ndarray.js';
import type { AttrValue, Attrs, Keyed } from './op.js';
import type { StaticShape, TensorType } from './types.js';
import type { DType } from './dtype.js';
import { EMPTY, currentProvenance, type Provenance } from './provenance.js';

/** The mutable value behind a `variable` leaf; nodes stay immutable. */
export interface VariableCell {
  value: NDArray;
}

let nextId = 1;

/** The id the next node will get: nodes with an id at or above a mark were created after it. */
export function nodeIdMark(): number {
  return nextId;
}

export class Node {
  readonly id: number;
  /** Structural identity: op, attrs and input ids. */
  readonly key: string;
  /**
   * Which public calls built this node, and where (src/ir/provenance.ts): set when a `K.*` call
   * creates it, grown by passes whose replacements stand for other nodes. Not part of the key:
   * equal nodes are one node, with the records of the first call that built it.
   */
  provenance: readonly Provenance[];

  constructor(
    readonly op: string,
    readonly inputs: readonly Node[],
    readonly attrs: Attrs,
    readonly type: TensorType,
    key: string,
    /** Present on `variable` leaves only. */
    readonly cell?: VariableCell,
  ) {
    this.id = nextId++;
    this.key = key;
    this.provenance = currentProvenance() ?? EMPTY;
    Object.freeze(this.inputs);
    deepFreeze(this.attrs);
  }

  /** Static shape, `null` where unknown. */
  get shape(): StaticShape {
    return this.type.shape;
  }
  get dtype(): DType {
    return this.type.dtype;
  }
  get ndim(): number {
    return this.type.shape.length;
  }
  /** The user's name for leaves; `op_id` otherwise. */
  get name(): string {
    const n = this.attrs['name'];
    return typeof n === 'string' && n !== '' ? n : `${this.op}_${this.id}`;
  }
  toString(): string {
    return `Tensor(${this.name}, ${this.dtype}, ${formatShape(this.shape)})`;
  }
}

/** Freezes attrs through arrays and plain objects, since the key was computed from their contents. */
function deepFreeze(v: unknown): void {
  if (v === null || typeof v !== 'object' || v instanceof NDArray) return;
  const proto = Object.getPrototypeOf(v);
  if (!Array.isArray(v) && proto !== Object.prototype && proto !== null) return; // Keyed objects own their state
  Object.freeze(v);
  for (const x of Object.values(v)) deepFreeze(x);
}

// Hash-consing table. Weak references let unused graphs be collected.
const table = new Map<string, WeakRef<Node>>();
const reaper = new FinalizationRegistry<string>((key) => {
  const ref = table.get(key);
  if (ref !== undefined && ref.deref() === undefined) table.delete(key);
});

/** The unique node for (op, inputs, attrs). */
export function intern(op: string, inputs: readonly Node[], attrs: Attrs, type: TensorType): Node {
  const key = `${op}(${inputs.map((n) => n.id).join(',')})${attrsKey(attrs)}`;
  const hit = table.get(key)?.deref();
  if (hit !== undefined) return hit;
  const node = new Node(op, inputs, attrs, type, key);
  table.set(key, new WeakRef(node));
  reaper.register(node, key);
  return node;
}

let freshCount = 0;

/**
 * A leaf that is never shared (placeholders, variables, unseeded random draws). Their attrs
 * cannot serve as identity: uids restart after reset_uids/clear_session, so an old and a new
 * placeholder can have equal attrs, and a new variable must not come back with an old cell.
 */
export function fresh(op: string, attrs: Attrs, type: TensorType, cell?: VariableCell): Node {
  return new Node(op, [], attrs, type, `${op}#${++freshCount}${attrsKey(attrs)}`, cell);
}

/** Number of live interned nodes (for tests of hash-consing and collection). */
export function internedCount(): number {
  return table.size;
}

export function attrsKey(attrs: Attrs): string {
  const ks = Object.keys(attrs).sort();
  return ks.length === 0 ? '' : '{' + ks.map((k) => `${k}=${valueKey(attrs[k]!)}`).join(';') + '}';
}

/** JSON.stringify writes NaN and the infinities as null and -0 as 0; attrs must keep them apart. */
function numberKey(x: number): string {
  return Object.is(x, -0) ? '-0' : String(x);
}

function valueKey(v: AttrValue): string {
  if (typeof v === 'number') return numberKey(v);
  if (v === null || typeof v !== 'object') return JSON.stringify(v);
  if (v instanceof NDArray) return `nd<${v.dtype}[${v.shape.join('x')}]#${hashData(v)}>`;
  if (Array.isArray(v)) return '[' + v.map((x) => valueKey(x as AttrValue)).join(',') + ']';
  if (typeof (v as Keyed).attrKey === 'function') return (v as Keyed).attrKey();
  const o = v as { readonly [k: string]: AttrValue };
  return (
    '{' +
    Object.keys(o)
      .sort()
      .map((k) => `${k}:${valueKey(o[k]!)}`)
      .join(',') +
    '}'
  );
}

/** Two independent 32-bit hashes of the data's bytes (64 bits), plus its size; small arrays carry their values. */
function hashData(a: NDArray): string {
  if (a.size <= 8) return Array.from(a.data, numberKey).join('_');
  const bytes = new Uint8Array(a.data.buffer, a.data.byteOffset, a.data.byteLength);
  let h1 = 0x811c9dc5;
  let h2 = 0x9747b28c;
  for (let i = 0; i < bytes.length; i++) {
    const b = bytes[i]!;
    h1 = Math.imul(h1 ^ b, 0x01000193);
    h2 = Math.imul(h2 ^ b, 0x5bd1e995);
    h2 ^= h2 >>> 15;
  }
  return `${(h1 >>> 0).toString(16)}${(h2 >>> 0).toString(16)}:${a.size}`;
}
