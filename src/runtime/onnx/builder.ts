// Builds one ONNX graph (or a Loop body) node by node. Every value has a name, a dtype and a
// static shape (null dims unknown), so translations can pick static forms where shapes are known
// and read dims at run time (Shape, Slice) where they are not.
import type { DType } from '../../ir/dtype.js';
import { NDArray } from '../../ir/ndarray.js';
import type { StaticShape } from '../../ir/types.js';
import { ONNX_DTYPE, tensorProto } from './dtypes.js';
import {
  ATTR,
  type AttributeJson,
  type GraphJson,
  type NodeJson,
  type TensorJson,
  type ValueInfoJson,
} from './schema.js';

/** An op or a graph that ONNX cannot express (or theanine does not translate): names the op. */
export class OnnxExportError extends Error {
  override name = 'OnnxExportError';
}

/** A float attribute (plain numbers are int attributes). */
export class F {
  constructor(readonly value: number) {}
}
/** A graph attribute (a Loop body). */
export class G {
  constructor(readonly graph: GraphJson) {}
}
export type AttrArg =
  | number
  | string
  | readonly number[]
  | F
  | G
  | NDArray
  | { readonly floats: readonly number[] }
  | { readonly strings: readonly string[] };
export type AttrMap = { readonly [k: string]: AttrArg | undefined };

export interface Val {
  readonly dtype: DType;
  readonly shape: StaticShape;
}

/** State shared by a model's graph and its subgraphs: unique names and the model's initializers. */
export class ModelState {
  private count = 0;
  readonly initializers: TensorJson[] = [];
  readonly ops = new Set<string>();
  private readonly constCache = new Map<string, string>();
  constructor(readonly opset: number) {}
  fresh(prefix: string): string {
    return `${prefix}_${++this.count}`;
  }
  /** A constant as an initializer of the main graph (visible from every subgraph), shared when equal. */
  constant(a: NDArray, vals: Map<string, Val>): string {
    const small = a.size <= 16 ? `${a.dtype}[${a.shape.join(',')}]${Array.from(a.data).join(',')}` : undefined;
    const hit = small === undefined ? undefined : this.constCache.get(small);
    if (hit !== undefined) {
      vals.set(hit, { dtype: a.dtype, shape: a.shape });
      return hit;
    }
    const name = this.fresh('const');
    this.initializers.push(tensorProto(name, a));
    if (small !== undefined) this.constCache.set(small, name);
    vals.set(name, { dtype: a.dtype, shape: a.shape });
    return name;
  }
}

function attr(name: string, v: AttrArg): AttributeJson {
  if (typeof v === 'number') return { name, type: ATTR.INT, i: v };
  if (typeof v === 'string') return { name, type: ATTR.STRING, s: new TextEncoder().encode(v) };
  if (v instanceof F) return { name, type: ATTR.FLOAT, f: v.value };
  if (v instanceof G) return { name, type: ATTR.GRAPH, g: v.graph };
  if (v instanceof NDArray) return { name, type: ATTR.TENSOR, t: tensorProto('', v) };
  if ('floats' in v) return { name, type: ATTR.FLOATS, floats: [...v.floats] };
  if ('strings' in v) return { name, type: ATTR.STRINGS, strings: v.strings.map((x) => new TextEncoder().encode(x)) };
  return { name, type: ATTR.INTS, ints: [...(v as readonly number[])] };
}

export function valueInfo(name: string, v: Val, dimName: (axis: number) => string): ValueInfoJson {
  return {
    name,
    type: {
      tensorType: {
        elemType: ONNX_DTYPE[v.dtype],
        shape: { dim: v.shape.map((d, i) => (d === null ? { dimParam: dimName(i) } : { dimValue: d })) },
      },
    },
  };
}

export class GraphBuilder {
  readonly nodes: NodeJson[] = [];
  /** Every value this graph (or an enclosing one) defines. */
  readonly vals: Map<string, Val>;

  constructor(
    readonly model: ModelState,
    parent?: GraphBuilder,
  ) {
    this.vals = new Map(parent?.vals);
  }

  get opset(): number {
    return this.model.opset;
  }

  val(name: string): Val {
    const v = this.vals.get(name);
    if (v === undefined) throw new Error(`internal: ONNX value ${name} is not defined`);
    return v;
  }

  define(name: string, v: Val): string {
    this.vals.set(name, v);
    return name;
  }

  /** One node with one output of the given type. */
  op(opType: string, inputs: readonly string[], attrs: AttrMap, out: Val): string {
    return this.opN(opType, inputs, attrs, [out])[0]!;
  }

  opN(opType: string, inputs: readonly string[], attrs: AttrMap, outs: readonly Val[]): string[] {
    const names = outs.map(() => this.model.fresh(opType.toLowerCase()));
    names.forEach((n, i) => this.vals.set(n, outs[i]!));
    const attribute = Object.entries(attrs)
      .filter((e): e is [string, AttrArg] => e[1] !== undefined)
      .map(([k, v]) => attr(k, v));
    this.nodes.push({
      input: [...inputs],
      output: names,
      opType,
      name: this.model.fresh(`n_${opType}`),
      ...(attribute.length > 0 ? { attribute } : {}),
    });
    this.model.ops.add(opType);
    return names;
  }

  constant(a: NDArray): string {
    const name = this.model.constant(a, this.vals);
    return name;
  }

  i64(values: readonly number[]): string {
    return this.constant(new NDArray(values, [values.length], 'int64'));
  }

  scalar(v: number, dtype: DType): string {
    return this.constant(new NDArray([v], [], dtype));
  }

  cast(x: string, dtype: DType): string {
    const v = this.val(x);
    if (v.dtype === dtype) return x;
    return this.op('Cast', [x], { to: ONNX_DTYPE[dtype] }, { dtype, shape: v.shape });
  }

  /** x's shape as a 1-D int64 tensor: a constant when every dim is known. */
  shapeOf(x: string): string {
    const s = this.val(x).shape;
    if (s.every((d) => d !== null)) return this.i64(s as number[]);
    return this.op('Shape', [x], {}, { dtype: 'int64', shape: [s.length] });
  }

  /** Dim i of x as a 1-element int64 tensor. */
  dim(x: string, i: number): string {
    const d = this.val(x).shape[i];
    if (d !== null && d !== undefined) return this.i64([d]);
    return this.op('Shape', [x], { start: i, end: i + 1 }, { dtype: 'int64', shape: [1] });
  }

  /** A 1-D int64 shape from parts: numbers, or names of 1-element int64 tensors. */
  vec(parts: readonly (number | string)[]): string {
    if (parts.every((p) => typeof p === 'number')) return this.i64(parts as number[]);
    const items: string[] = [];
    let run: number[] = [];
    for (const p of parts) {
      if (typeof p === 'number') {
        run.push(p);
        continue;
      }
      if (run.length > 0) {
        items.push(this.i64(run));
        run = [];
      }
      items.push(p);
    }
    if (run.length > 0) items.push(this.i64(run));
    return this.op('Concat', items, { axis: 0 }, { dtype: 'int64', shape: [parts.length] });
  }

  reshape(x: string, shape: StaticShape, target?: string): string {
    const v = this.val(x);
    const t = target ?? (shape.every((d) => d !== null) ? this.i64(shape as number[]) : undefined);
    if (t === undefined) throw new OnnxExportError(`internal: reshape to ${JSON.stringify(shape)} needs a target`);
    return this.op('Reshape', [x, t], { allowzero: 1 }, { dtype: v.dtype, shape });
  }

  unsqueeze(x: string, axes: readonly number[]): string {
    const v = this.val(x);
    const r = v.shape.length + axes.length;
    const norm = axes.map((a) => (a < 0 ? a + r : a)).sort((p, q) => p - q);
    const out: (number | null)[] = [];
    let k = 0;
    for (let i = 0; i < r; i++) out.push(norm.includes(i) ? 1 : v.shape[k++]!);
    return this.op('Unsqueeze', [x, this.i64(norm)], {}, { dtype: v.dtype, shape: out });
  }

  squeeze(x: string, axes: readonly number[]): string {
    const v = this.val(x);
    return this.op(
      'Squeeze',
      [x, this.i64(axes)],
      {},
      { dtype: v.dtype, shape: v.shape.filter((_, i) => !axes.includes(i)) },
    );
  }

  /** ReduceX over axes (axes an attribute before opset 18, an input from 18; ReduceSum an input from 13). */
  reduce(opType: string, x: string, axes: readonly number[], keepdims: boolean, out: Val): string {
    if (axes.length === 0) return this.op('Identity', [x], {}, out);
    if (opType === 'ReduceSum' || this.opset >= 18)
      return this.op(opType, [x, this.i64(axes)], { keepdims: keepdims ? 1 : 0 }, out);
    return this.op(opType, [x], { axes, keepdims: keepdims ? 1 : 0 }, out);
  }

  /** Slice with static starts/ends/axes/steps. */
  slice(
    x: string,
    starts: readonly number[],
    ends: readonly number[],
    axes: readonly number[],
    steps: readonly number[],
    out: Val,
  ): string {
    return this.op('Slice', [x, this.i64(starts), this.i64(ends), this.i64(axes), this.i64(steps)], {}, out);
  }
}

/** Large enough to mean "to the end" in Slice (ONNX clamps it), exact as a double. */
export const BIG = 2 ** 62;
