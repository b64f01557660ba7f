// Kernels of the ops whose loops are not a function of output coordinates alone, so they have no
// template (src/codegen/templates*.ts): they read or write at positions taken from data, or draw
// random numbers from a key known only at run time. Each becomes one or a few loop kernels:
//   gather            out[j, t] = ref[row(ind[j]), t]          (a load with a data-dependent row)
//   scatter_add_rows  acc[row(ind[j]), t] += g[j, t]           (an accumulating store), in float64
//                     as the reference sums, then rounded into the result
//   random_*          out[i] = philoxDraw(kind, i, key...)     (the reference's numbers, per element)
//   cumsum, cumprod   acc[k] = acc[k - 1] (op) x[k]              (a scan: each element reads the one before)
//   ctc_loss(_grad)   alpha/beta recursions over time              (lower-ctc.ts)
//   pool_grad         dx[s] = sum over the windows reaching s      (lower-pool.ts: a first kernel finds each
//                     window's first maximum, or its count of cells, then a gather over the taps)
// For the gpu (LowerSpec.gatherLoops), where one thread computes each output element, the scatter
// and the scans become gathers: out[r, t] = sum over j of (row(ind[j]) == r ? g[j, t] : 0), and
// out[k] = the fold of x[k'] over k' <= k (float32 on the device; O(n) work per element).
// Row numbers are checked in the kernel ('row' expressions): an index out of range is an error
// naming the op, as the reference's. These kernels are never fused (classify: 'opaque'), which
// keeps data-dependent loads out of matmul packing and in-place planning.
import type { DType } from '../../ir/dtype.js';
import type { Node } from '../../ir/node.js';
import { formatShape, sizeOf } from '../../ir/ndarray.js';
import type { RandomAttrs } from '../../ir/ops/random.js';
import { ExprBuilder, type Expr, type ReduceOp } from '../kernel/expr.js';
import { cumulativeRow } from '../../ir/ops/reduce.js';
import { iadd, iconst, imod, ivar, newVar, ravel, unravel, type IExpr } from '../kernel/index-expr.js';
import type { BufferDecl, BufferRole, LoopKernel, Step, ValueRef } from '../kernel/ir.js';
import { collapseLoopKernel } from '../transform/collapse.js';
import { DRAW, philoxDraw } from './random-fn.js';
import { CTC_OPS, lowerCtc } from './ctc.js';
import { lowerPoolGrad } from './pool.js';
import { isOp } from '../../ir/registry.js';

type AddBuf = (dtype: DType, size: number, role: BufferRole) => number;

export interface DataLowerEnv {
  readonly buffers: readonly BufferDecl[];
  readonly addBuf: AddBuf;
  /** The buffer holding the evaluation's epoch (unseeded random keys), made on first use. */
  readonly epochBuf: () => number;
  /** Intermediates one op's kernels computed that another op of the same program reuses (the CTC recursions). */
  readonly shared: Map<string, unknown>;
  /** LowerSpec.gatherLoops: scans and scatters as gathers of at most this many terms per element (the gpu). */
  readonly gatherLoops?: number;
}

const plus = (x: IExpr, k: number): IExpr => iadd(x, iconst(k));

/** Kernels for node `n` (output `out` of `outRole`), or undefined when it is not one of these ops. */
export function lowerDataOp(
  n: Node,
  outShape: readonly number[],
  outDType: DType,
  ins: readonly ValueRef[],
  env: DataLowerEnv,
  outRole: BufferRole,
): { steps: Step[]; value: ValueRef } | undefined {
  const b = new ExprBuilder((buf) => env.buffers[buf]!.dtype);
  const loop = (
    label: string,
    shape: readonly number[],
    body: (coords: IExpr[]) => {
      buf: number;
      index: IExpr;
      value: Expr;
      dtype: DType;
      dyn?: { row: Expr; stride: number };
      accumulate?: boolean;
    },
  ): LoopKernel => {
    const vars = shape.map((d) => newVar(d));
    const st = body(vars.map(ivar));
    return collapseLoopKernel({ kind: 'loop', label, vars, stores: [st] }, b);
  };
  const load = (v: ValueRef, coords: readonly IExpr[]) => b.load(v.buf, plus(ravel(coords, v.shape), v.offset));
  switch (n.op) {
    case 'gather': {
      const [ref, ind] = ins as [ValueRef, ValueRef];
      const rows = ref.shape[0]!;
      const rowShape = ref.shape.slice(1);
      const out = env.addBuf(outDType, sizeOf(outShape), outRole);
      const k = loop('gather', outShape, (co) => {
        const row = b.row(load(ind, co.slice(0, ind.shape.length)), rows, 'gather', formatShape(ref.shape));
        const value = b.load(ref.buf, plus(ravel(co.slice(ind.shape.length), rowShape), ref.offset), {
          row,
          stride: sizeOf(rowShape),
        });
        return { buf: out, index: ravel(co, outShape), value, dtype: outDType };
      });
      return { steps: [k], value: { buf: out, offset: 0, shape: outShape, dtype: outDType } };
    }
    case 'scatter_add_rows': {
      const [g, ind] = ins as [ValueRef, ValueRef];
      const rows = outShape[0]!;
      const rowShape = outShape.slice(1);
      const size = sizeOf(outShape);
      const nInd = sizeOf(ind.shape);
      if (env.gatherLoops !== undefined && nInd <= env.gatherLoops && outDType !== 'float64') {
        // One thread per output element: out[r, t] = sum over the indices j (in order) of g[j, t] where row(ind[j]) == r.
        const out = env.addBuf(outDType, size, outRole);
        const k = loop('scatter_add_rows', outShape, (co) => {
          const j = newVar(nInd);
          const jc = ravel([ivar(j)], [nInd]);
          const row = b.row(b.load(ind.buf, plus(jc, ind.offset)), rows, 'scatter_add_rows', formatShape(outShape));
          const term = b.op(
            'select',
            b.op('eq', row, b.index(co[0]!)),
            load(g, [...unravel(ivar(j), ind.shape), ...co.slice(1)]),
            b.const(0),
          );
          return {
            buf: out,
            index: ravel(co, outShape),
            value: b.cast(outDType, b.reduce('sum', [j], term)),
            dtype: outDType,
          };
        });
        return { steps: [k], value: { buf: out, offset: 0, shape: outShape, dtype: outDType } };
      }
      // Sums in float64 in the reference's order (indices in row-major order), rounded once at the end.
      const wide = outDType === 'float64';
      const acc = wide ? env.addBuf('float64', size, outRole) : env.addBuf('float64', size, 'temp');
      const steps: Step[] = [
        loop('scatter_add_rows:zero', [size], (co) => ({
          buf: acc,
          index: co[0]!,
          value: b.const(0),
          dtype: 'float64',
        })),
        loop('scatter_add_rows', g.shape, (co) => ({
          buf: acc,
          index: ravel(co.slice(ind.shape.length), rowShape),
          dtype: 'float64',
          accumulate: true,
          dyn: {
            row: b.row(load(ind, co.slice(0, ind.shape.length)), rows, 'scatter_add_rows', formatShape(outShape)),
            stride: sizeOf(rowShape),
          },
          value: load(g, co),
        })),
      ];
      if (wide) return { steps, value: { buf: acc, offset: 0, shape: outShape, dtype: outDType } };
      const out = env.addBuf(outDType, size, outRole);
      steps.push(
        loop('scatter_add_rows:round', [size], (co) => ({
          buf: out,
          index: co[0]!,
          value: b.cast(outDType, b.load(acc, co[0]!)),
          dtype: outDType,
        })),
      );
      return { steps, value: { buf: out, offset: 0, shape: outShape, dtype: outDType } };
    }
    case 'random_uniform':
    case 'random_normal':
    case 'random_binomial':
    case 'truncated_normal': {
      if (!isOp(n, 'random_uniform', 'random_normal', 'random_binomial', 'truncated_normal'))
        throw new Error(`internal: random lowering given ${n.op}`);
      const a: RandomAttrs = n.attrs;
      const kind =
        n.op === 'random_uniform'
          ? DRAW.uniform
          : n.op === 'random_normal'
            ? DRAW.normal
            : n.op === 'random_binomial'
              ? DRAW.binomial
              : DRAW.truncated;
      const [p1, p2] = isOp(n, 'random_uniform')
        ? [n.attrs.low, n.attrs.high]
        : isOp(n, 'random_binomial')
          ? [n.attrs.p, 0]
          : isOp(n, 'random_normal', 'truncated_normal')
            ? [n.attrs.mean, n.attrs.stddev]
            : [0, 0];
      // The key as the reference makes it (src/ir/random.ts: seededKey / unseededKey).
      const seeded = a.seed !== null;
      const k0 = seeded ? a.seed! >>> 0 : a.uid! >>> 0;
      const k1: Expr = seeded ? b.const(Math.floor(a.seed! / 0x100000000) >>> 0) : b.load(env.epochBuf(), iconst(0));
      const bits = outDType === 'float64' ? 53 : outDType === 'float16' ? 11 : 24;
      const out = env.addBuf(outDType, sizeOf(outShape), outRole);
      const k = loop(n.op, outShape, (co) => {
        const i = b.index(ravel(co, outShape));
        const args = [
          b.const(kind),
          i,
          b.const(k0),
          k1,
          b.const(seeded ? 0 : 1),
          b.const(p1),
          b.const(p2),
          b.const(bits),
        ];
        return {
          buf: out,
          index: ravel(co, outShape),
          value: b.cast(outDType, b.call(philoxDraw, n.op, args)),
          dtype: outDType,
        };
      });
      return { steps: [k], value: { buf: out, offset: 0, shape: outShape, dtype: outDType } };
    }
    case 'cumsum':
    case 'cumprod': {
      // A scan along the axis: acc[o, k, i] = (k == 0 ? init : acc[o, k - 1, i]) (op) x[o, k, i] in
      // float64 as the reference accumulates, each element also rounded into the result. The loops
      // run in row-major order, so acc[o, k - 1, i] is stored before acc[o, k, i] reads it.
      const [x] = ins as [ValueRef];
      const rank = x.shape.length;
      if (!isOp(n, 'cumsum', 'cumprod')) throw new Error(`internal: cumulative lowering given ${n.op}`);
      const axis = n.attrs.axis < 0 ? n.attrs.axis + rank : n.attrs.axis;
      const size = sizeOf(outShape);
      if (env.gatherLoops !== undefined && outShape[axis]! <= env.gatherLoops && outDType !== 'float64') {
        // One thread per output element: out[o, k, i] = the fold of x[o, k', i] over k' <= k (k' > k adds the identity).
        const out = env.addBuf(outDType, size, outRole);
        const row = cumulativeRow(n.op)!;
        const k = loop(n.op, outShape, (co) => {
          const kv = newVar(outShape[axis]!);
          const xs = co.map((c, d) => (d === axis ? ivar(kv) : c));
          const term = b.op(
            'select',
            b.op('le', b.index(ivar(kv)), b.index(co[axis]!)),
            load(x, xs),
            b.const(row.identity),
          );
          return {
            buf: out,
            index: ravel(co, outShape),
            value: b.cast(outDType, b.reduce(row.spelling.kernel as ReduceOp, [kv], term)),
            dtype: outDType,
          };
        });
        return { steps: [k], value: { buf: out, offset: 0, shape: outShape, dtype: outDType } };
      }
      const acc = env.addBuf('float64', size, 'temp');
      const out = env.addBuf(outDType, size, outRole);
      const vars = outShape.map((d) => newVar(d));
      const co = vars.map(ivar);
      const k = co[axis]!;
      // (k - 1) mod n: in range at k = 0 too (the select ignores it there), and never simplified to a
      // constant, so the read stays inside the k loop (a read hoisted above it would see the element unwritten).
      const row = cumulativeRow(n.op)!;
      const nAxis = outShape[axis]!;
      const prev = co.map((c, d) => (d === axis ? imod(iadd(c, iconst(nAxis - 1)), Math.max(nAxis, 1)) : c));
      const before = b.op(
        'select',
        b.op('eq', b.index(k), b.const(0)),
        b.const(row.identity),
        b.load(acc, ravel(prev, outShape)),
      );
      const value = b.op(row.spelling.combine, before, load(x, co));
      const index = ravel(co, outShape);
      const kern: LoopKernel = {
        kind: 'loop',
        label: n.op,
        vars,
        stores: [
          { buf: acc, index, value, dtype: 'float64' },
          { buf: out, index, value: b.cast(outDType, value), dtype: outDType },
        ],
      };
      return { steps: [collapseLoopKernel(kern, b)], value: { buf: out, offset: 0, shape: outShape, dtype: outDType } };
    }
    case 'pool_grad':
      return isOp(n, 'pool_grad') ? lowerPoolGrad(n, b, ins, outShape, outDType, env.addBuf, outRole) : undefined;
    default:
      return lowerCtc(n, outShape, outDType, ins, b, env.addBuf, outRole, env.shared);
  }
}

/** Ops lowered here (for docs and tests). */
export const DATA_OPS = [
  'gather',
  'scatter_add_rows',
  'random_uniform',
  'random_normal',
  'random_binomial',
  'truncated_normal',
  'cumsum',
  'cumprod',
  'pool_grad',
  ...CTC_OPS,
] as const;
