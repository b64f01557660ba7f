// Lowering: an optimized graph plus concrete input shapes -> a Program of kernels. Each fused
// node (or single op with a template) becomes one kernel; ops without a template become extern
// steps. Shapes are concrete here, so every loop bound is a constant and every index is
// arithmetic on loop variables.
import { evalContext } from '../../ir/interpret.js';
import { apply, rethrow } from '../../ir/build.js';
import type { DType } from '../../ir/dtype.js';
import { topoSort } from '../../ir/graph.js';
import { NDArray, formatShape, sizeOf } from '../../ir/ndarray.js';
import type { EvalContext } from '../../ir/op.js';
import type { Node } from '../../ir/node.js';
import { getOp, isOp, type OpNode } from '../../ir/registry.js';
import { tensorType, tupleType, type TensorType } from '../../ir/types.js';
import { ExprBuilder, type Expr } from '../kernel/expr.js';
import { iadd, iconst, ivar, newVar, ravel, type IExpr, type Var } from '../kernel/index-expr.js';
import type { BufferDecl, BufferRole, Program, Step, TargetRef, ValueRef } from '../kernel/ir.js';
import { indirectSize, setOrigin } from '../kernel/ir.js';
import { inherit } from '../../ir/provenance.js';
import type { KeepMode } from '../../ir/ops/control.js';
import { lowerScan } from './scan.js';
import { lowerDataOp, type DataLowerEnv } from './data.js';
import { externReason } from './no-kernel.js';
import { lowerCtcTuple } from './ctc.js';
import { collapseLoopKernel } from '../transform/collapse.js';
import { poolGeom, poolSpec } from './pool.js';
import { templateOf, type LoopTemplate, type MatmulTemplate, type TemplateCtx } from './templates.js';

import { DynamicShapeError, type Concrete, type LowerSpec } from './types.js';

export { DynamicShapeError, type Concrete, type LowerSpec };

/** The product of a concrete shape (ir/ndarray.ts), re-exported for the lowering's modules. */
export { sizeOf };
const sameShape = (a: readonly number[], b: readonly number[]) =>
  a.length === b.length && a.every((d, i) => d === b[i]);

export function lower(spec: LowerSpec): Program {
  const { types, known, subst } = specializeShapes(spec.targets, (n) => {
    const slot = spec.inputSlot.get(n);
    return slot === undefined ? undefined : { shape: spec.inputShapes[slot]!, dtype: n.dtype };
  });
  const targetNodes = spec.targets.map(subst);
  const order = valueOrder(targetNodes);

  const buffers: BufferDecl[] = [];
  const addBuf = (
    dtype: DType,
    size: number,
    role: BufferRole,
    extra: { slot?: number; value?: NDArray } = {},
  ): number => {
    buffers.push({ id: buffers.length, dtype, size, role, ...extra });
    return buffers.length - 1;
  };
  const values = new Map<Node, ValueRef>();
  const steps: Step[] = [];
  const isTarget = new Set(targetNodes);
  const tupleItems = new Map<Node, ValueRef[]>();

  let epochBuf: number | undefined;
  const dataEnv: DataLowerEnv = {
    buffers,
    addBuf: (dtype, size, role) => addBuf(dtype, size, role),
    epochBuf: () => (epochBuf ??= addBuf('float64', 1, 'epoch')),
    shared: new Map(),
    ...(spec.gatherLoops !== undefined ? { gatherLoops: spec.gatherLoops } : {}),
  };
  const constant = (nd: NDArray): ValueRef => ({
    buf: addBuf(nd.dtype, nd.size, 'constant', { value: nd }),
    offset: 0,
    shape: nd.shape,
    dtype: nd.dtype,
  });

  // Each step records the provenance of the node it computes (comments in generated source, errors at call time).
  let tagFrom = 0;
  let tagNode: Node | undefined;
  const tag = () => {
    if (tagNode !== undefined && tagNode.provenance.length > 0)
      for (let k = tagFrom; k < steps.length; k++) setOrigin(steps[k]!, tagNode.provenance);
  };
  for (const n of order) {
    tag();
    tagFrom = steps.length;
    tagNode = n;
    const t = types.get(n)!;
    const slot = spec.inputSlot.get(n);
    if (slot !== undefined) {
      values.set(n, { buf: addBuf(t.dtype, sizeOf(t.shape), 'input', { slot }), offset: 0, ...t });
      continue;
    }
    if (n.op === 'variable') {
      values.set(n, {
        buf: addBuf(t.dtype, sizeOf(t.shape), 'variable', { slot: spec.variableSlot.get(n)! }),
        offset: 0,
        ...t,
      });
      continue;
    }
    if (n.op === 'learning_phase') {
      values.set(n, { buf: addBuf('uint8', 1, 'phase'), offset: 0, ...t });
      continue;
    }
    if (isOp(n, 'constant')) {
      values.set(n, constant(n.attrs.value));
      continue;
    }
    const kv = known.get(n);
    if (kv !== undefined && n.inputs.length > 0) {
      values.set(n, constant(kv));
      continue;
    }
    if (isOp(n, 'print')) {
      // A host callback in the generated code; the value passes through.
      const v = values.get(n.inputs[0]!)!;
      steps.push({ kind: 'print', label: 'print', message: n.attrs.message, input: v });
      values.set(n, v);
      continue;
    }
    if (isOp(n, 'tuple_get')) {
      values.set(n, tupleItems.get(n.inputs[0]!)![n.attrs.index]!);
      continue;
    }
    let why = externReason(n.op);
    if (isOp(n, 'scan')) {
      const lowered =
        spec.optimizeBody === undefined
          ? { reason: 'Scan bodies are not compiled here' }
          : lowerScan(n, t, spec, values, addBuf, lower);
      if ('step' in lowered) {
        steps.push(lowered.step);
        tupleItems.set(n, lowered.items);
        continue;
      }
      why = lowered.reason;
    }
    if (t.items !== undefined && n.op !== 'scan') {
      const lt = lowerCtcTuple(
        n,
        t.items,
        n.inputs.map((i) => values.get(i)!),
        new ExprBuilder((buf) => buffers[buf]!.dtype),
        (dtype, size, role) => addBuf(dtype, size, role),
      );
      if (lt !== undefined) {
        steps.push(...lt.steps);
        tupleItems.set(n, lt.items);
        continue;
      }
    }
    if (t.items !== undefined) {
      // A tuple-valued op (a Scan, ctc_decode): its implTuple, one buffer per item.
      const outs = t.items.map((it) => ({
        buf: addBuf(it.dtype, sizeOf(it.shape), 'extern'),
        shape: it.shape,
        dtype: it.dtype,
      }));
      steps.push({
        kind: 'extern',
        label: n.op,
        reason: why,
        def: getOp(n.op),
        attrs: n.attrs,
        inputs: n.inputs.map((i) => values.get(i)!),
        tuple: true,
        outs,
      });
      tupleItems.set(
        n,
        outs.map((o) => ({ ...o, offset: 0 })),
      );
      continue;
    }

    const outRole: BufferRole = isTarget.has(n) ? 'target' : 'temp';
    const lowered = lowerNode(
      n,
      types,
      values,
      buffers,
      (dtype, size, role) => addBuf(dtype, size, role),
      outRole,
      spec.tile,
    );
    if (lowered !== undefined) {
      if (lowered.step !== undefined) steps.push(lowered.step);
      values.set(n, lowered.value);
      continue;
    }
    const data = lowerDataOp(
      n,
      t.shape,
      t.dtype,
      n.inputs.map((i) => values.get(i)!),
      dataEnv,
      outRole,
    );
    if (data !== undefined) {
      steps.push(...data.steps);
      values.set(n, data.value);
      continue;
    }
    if (n.inputs.some((i) => !values.has(i)))
      throw new Error(
        `internal: ${n.op} runs as an extern step but reads an input that was left uncomputed as read for its shape only`,
      );
    const out = addBuf(t.dtype, sizeOf(t.shape), 'extern');
    steps.push({
      kind: 'extern',
      label: n.op,
      reason: isOp(n, 'fused') ? `a fused kernel of ${fusedOps(n)} that the lowering cannot render` : why,
      def: getOp(n.op),
      attrs: n.attrs,
      inputs: n.inputs.map((i) => values.get(i)!),
      tuple: false,
      outs: [{ buf: out, shape: t.shape, dtype: t.dtype }],
    });
    values.set(n, { buf: out, offset: 0, ...t });
  }

  tag();
  const claimed = new Set<number>();
  const targets: TargetRef[] = targetNodes.map((n) => {
    const v = values.get(n)!;
    const role = buffers[v.buf]!.role;
    const fresh =
      (role === 'target' || role === 'extern') &&
      v.offset === 0 &&
      !claimed.has(v.buf) &&
      sizeOf(v.shape) === buffers[v.buf]!.size;
    if (fresh) claimed.add(v.buf);
    return { ...v, copy: !fresh };
  });
  return { buffers, steps, targets };
}

function typeOf(c: Concrete): TensorType {
  return c.items !== undefined ? tupleType(c.items.map(typeOf)) : tensorType(c.dtype, c.shape);
}

const KNOWN_MAX = 4096;
const shapeCtx: EvalContext = evalContext({ learningPhase: 0, epoch: 0, print: () => undefined });

function knownValue(
  n: Node,
  types: ReadonlyMap<Node, Concrete>,
  known: ReadonlyMap<Node, NDArray>,
): NDArray | undefined {
  if (isOp(n, 'constant')) return n.attrs.value;
  if (n.op === 'shape_of') return new NDArray(types.get(n.inputs[0]!)!.shape, [n.inputs[0]!.ndim], 'int32');
  const t = types.get(n)!;
  if (n.inputs.length === 0 || t.items !== undefined || sizeOf(t.shape) > KNOWN_MAX) return undefined;
  const def = getOp(n.op);
  if (def.impure === true || !n.inputs.every((i) => known.has(i))) return undefined;
  try {
    return def.impl(
      n.inputs.map((i) => known.get(i)!),
      n.attrs,
      shapeCtx,
    );
  } catch {
    return undefined; // the run-time call reports it
  }
}

function fusedOps(n: OpNode<'fused'>): string {
  const ops = new Set(
    topoSort([n.attrs.body.root])
      .filter((m) => m.inputs.length > 0)
      .map((m) => m.op),
  );
  return [...ops].join(', ');
}

/**
 * Every node's concrete type for one set of input shapes (the specialisation), and the values fixed
 * by the shapes alone (shape_of and small pure functions of it and of constants: Theano's shape
 * feature, XLA's dynamic dimensions). Those values become constants of the specialisation and give
 * ops like random_normal(K.shape(x)) or reshape(y, [-1, K.shape(x)[1]]) their shape. `leaf` gives
 * the inputs' types (placeholders, a Scan body's args); other leaves have their static type.
 */
export function specializeShapes(
  roots: readonly Node[],
  leaf: (n: Node) => Concrete | undefined,
): { types: Map<Node, Concrete>; known: Map<Node, NDArray>; subst: (n: Node) => Node } {
  const types = new Map<Node, Concrete>();
  const known = new Map<Node, NDArray>();
  // Sized ops whose sizes are known here become their static ops, and what reads them is rebuilt.
  const subst = new Map<Node, Node>();
  for (const n of topoSort(roots)) {
    let m = n;
    const lt = leaf(n);
    if (lt === undefined && n.inputs.length > 0) {
      const ins = n.inputs.map((i) => subst.get(i) ?? i);
      try {
        if (ins.some((x, k) => x !== n.inputs[k])) m = apply(n.op, ins, n.attrs);
        const r = getOp(m.op).resolve?.(
          ins.map((i) => known.get(i)),
          ins.map((i) => types.get(i)!),
          m.attrs,
        );
        if (r !== undefined)
          m = apply(
            r.op,
            r.inputs.map((k) => ins[k]!),
            r.attrs,
          );
        if (m !== n) inherit(m, [n]); // the specialised node is still the user's call
      } catch (e) {
        // Sizes that do not fit: the reference interpreter reports it, in its words.
        throw new DynamicShapeError(n.op, rethrow(e, n.op).message, true);
      }
    }
    subst.set(n, m);
    if (types.has(m)) continue;
    types.set(m, lt ?? concreteType(m, types, known));
    const v = knownValue(m, types, known);
    if (v !== undefined) known.set(m, v);
  }
  return { types, known, subst: (n) => subst.get(n) ?? n };
}

function concreteType(n: Node, types: ReadonlyMap<Node, Concrete>, known: ReadonlyMap<Node, NDArray>): Concrete {
  if (n.inputs.length === 0) return concrete(n, n.type);
  if (isOp(n, 'scan'))
    return scanType(
      n,
      n.inputs.map((i) => types.get(i)!),
    );
  let t: TensorType;
  try {
    t = getOp(n.op).infer(
      n.inputs.map((i) => typeOf(types.get(i)!)),
      n.attrs,
    );
  } catch (e) {
    // Shapes that do not fit at run time: the reference interpreter reports it, in its words.
    throw new DynamicShapeError(n.op, rethrow(e, n.op).message, true);
  }
  // A shape read from input values (random_normal(K.shape(x))): when those values are known, run the op once to learn it.
  if (t.items === undefined && t.shape.some((d) => d === null) && n.inputs.every((i) => known.has(i))) {
    try {
      const v = getOp(n.op).impl(
        n.inputs.map((i) => known.get(i)!),
        n.attrs,
        shapeCtx,
      );
      t = tensorType(v.dtype, v.shape);
    } catch {
      // leave it unknown: the interpreter reports the error
    }
  }
  if (t.items === undefined && t.shape.some((d) => d === null)) {
    // Small int inputs whose values are not fixed by the shapes: name the leaves they are computed from.
    const fromValues = n.inputs.filter((i) => !known.has(i) && i.shape.length <= 1 && !isFloatish(i));
    const leaves = [...new Set(topoSort(fromValues).filter((m) => m.op === 'placeholder' || m.op === 'variable'))];
    const what =
      leaves.length > 0
        ? leaves.map((m) => `${m.op} ${m.name}`)
        : fromValues.map((i) => `the ${i.op} tensor ${i.name}`);
    throw new DynamicShapeError(
      n.op,
      `shape ${formatShape(t.shape)} is not known from the input shapes${
        what.length > 0 ? ` (it depends on the values of ${what.join(', ')}, not only on shapes)` : ''
      }`,
    );
  }
  return concrete(n, t);
}

const isFloatish = (n: Node) => n.dtype.startsWith('float');

/**
 * A Scan's items for concrete inputs: its body's shapes specialised to the per-step shapes of the
 * sequences, the initial states and the constants (the body's static types may have unknown
 * dims, a batch axis most often), then stacked over the steps as `scanItems` lays them out.
 */
function scanType(n: OpNode<'scan'>, ins: readonly Concrete[]): Concrete {
  const a = n.attrs;
  const b = a.body;
  const nSeq = b.sequences.length;
  const nState = b.states.length;
  const nOut = b.outputs.length;
  if (ins.length !== nSeq + nState + b.constants.length)
    throw new DynamicShapeError('scan', `takes ${nSeq + nState + b.constants.length} inputs, got ${ins.length}`, true);
  const steps = a.n_steps ?? ins[0]?.shape[0];
  if (steps === undefined) throw new DynamicShapeError('scan', 'a scan without sequences needs n_steps', true);
  const argShapes = new Map<Node, Concrete>();
  b.args.forEach((arg, i) => {
    const c = ins[i]!;
    argShapes.set(arg, i < nSeq ? { shape: c.shape.slice(1), dtype: c.dtype } : c);
  });
  let inner: Map<Node, Concrete>;
  let innerOf: (m: Node) => Node;
  try {
    const r = specializeShapes(b.results, (m) => argShapes.get(m));
    inner = r.types;
    innerOf = r.subst;
  } catch (e) {
    if (e instanceof DynamicShapeError)
      throw new DynamicShapeError(e.op, `in a scan body: ${e.message.slice(e.op.length + 2)}`, e.invalid);
    throw e;
  }
  const stacked = (c: Concrete, keep: KeepMode): Concrete =>
    keep === 'last' ? c : { shape: [keep === 'none' ? 0 : steps, ...c.shape], dtype: c.dtype };
  const states = ins.slice(nSeq, nSeq + nState);
  b.newStates.forEach((s, j) => {
    const got = inner.get(innerOf(s))!;
    if (!sameShape(got.shape, states[j]!.shape)) {
      throw new DynamicShapeError(
        'scan',
        `the body's new state ${j} has shape ${formatShape(got.shape)} but the state has shape ${formatShape(states[j]!.shape)}`,
      );
    }
  });
  const items: Concrete[] = [
    ...b.outputs.map((o, k) => stacked(inner.get(innerOf(o))!, a.keep[k]!)),
    ...states,
    ...states.map((s, j) => stacked(s, a.keep[nOut + j]!)),
  ];
  return { shape: [], dtype: n.dtype, items };
}

function concrete(n: Node, t: TensorType): Concrete {
  if (t.items !== undefined) return { shape: [], dtype: t.dtype, items: t.items.map((it) => concrete(n, it)) };
  if (t.shape.some((d) => d === null))
    throw new DynamicShapeError(n.op, `shape ${formatShape(t.shape)} is not known from the input shapes`);
  return { shape: t.shape as number[], dtype: t.dtype };
}

type AddBuf = (dtype: DType, size: number, role: BufferRole) => number;

/** One kernel for a fused node or a single op with a template; undefined when it needs an extern. */
/**
 * Whether node `n` reads input `k` for its shape only, not its values: a loop template's
 * shape-only input, or a fused node's parameter that every member of its body reads so.
 */
function readsShapeOnly(n: Node, k: number): boolean {
  const only = (m: Node, j: number) => {
    const t = templateOf(m);
    return t !== undefined && t.kind !== 'matmul' && t.shapeOnly?.(j) === true;
  };
  if (isOp(n, 'fused')) {
    const body = n.attrs.body;
    const param = body.params[k];
    if (param === undefined) return false;
    let read = false;
    for (const m of topoSort([body.root])) {
      for (let j = 0; j < m.inputs.length; j++) {
        if (m.inputs[j] !== param) continue;
        read = true;
        if (!only(m, j)) return false;
      }
    }
    return read;
  }
  return only(n, k);
}

/**
 * The nodes to compute, in topological order: everything the targets read for its values. A node
 * read only for its shape (the `x` of a gradient's sum_to_like(g, x), once fusion has put x's
 * computation into its consumer's kernel) is not computed: after specialisation its type is known.
 */
function valueOrder(targets: readonly Node[]): Node[] {
  const needed = new Set<Node>(targets);
  const all = topoSort(targets);
  for (let i = all.length - 1; i >= 0; i--) {
    const n = all[i]!;
    if (!needed.has(n)) continue;
    n.inputs.forEach((x, k) => {
      if (!readsShapeOnly(n, k)) needed.add(x);
    });
  }
  return all.filter((n) => needed.has(n));
}

function lowerNode(
  n: Node,
  types: ReadonlyMap<Node, Concrete>,
  values: ReadonlyMap<Node, ValueRef>,
  buffers: readonly BufferDecl[],
  addBuf: AddBuf,
  outRole: BufferRole,
  tile: LowerSpec['tile'],
): { step?: Step; value: ValueRef } | undefined {
  let root: Node;
  const params = new Map<Node, ValueRef>();
  let bodyTypes: ReadonlyMap<Node, Concrete>;
  if (isOp(n, 'fused')) {
    const body = n.attrs.body;
    root = body.root;
    // a parameter read for its shape only may have no value (valueOrder): it is never loaded
    body.params.forEach((p, i) => {
      const v = values.get(n.inputs[i]!);
      if (v !== undefined) params.set(p, v);
    });
    const bt = new Map<Node, Concrete>();
    body.params.forEach((p, i) => bt.set(p, types.get(n.inputs[i]!)!));
    for (const m of topoSort([root])) {
      if (bt.has(m)) continue;
      if (m.inputs.length === 0) {
        bt.set(m, { shape: m.shape as number[], dtype: m.dtype });
        continue;
      }
      const t = getOp(m.op).infer(
        m.inputs.map((i) => tensorType(bt.get(i)!.dtype, bt.get(i)!.shape)),
        m.attrs,
      );
      bt.set(m, { shape: t.shape as number[], dtype: t.dtype });
    }
    bodyTypes = bt;
  } else {
    const t = templateOf(n);
    if (t === undefined) return undefined;
    root = n;
    n.inputs.forEach((i) => {
      const v = values.get(i);
      if (v !== undefined) params.set(i, v);
    });
    bodyTypes = types;
  }
  // the kernel's leaves: its inputs, those read for their shape only (without a value) included
  const leaves = new Set<Node>(isOp(n, 'fused') ? n.attrs.body.params : n.inputs);
  const members = bodyMembers(root, leaves);
  if (members.some((m) => m.op !== 'constant' && templateOf(m) === undefined)) return undefined;
  const outT = types.get(n)!;
  const bufDTypes = new Map<number, DType>();
  for (const v of params.values()) bufDTypes.set(v.buf, v.dtype);
  const b = new ExprBuilder((buf) => bufDTypes.get(buf)!);
  const label = members
    .filter((m) => m.op !== 'constant')
    .map((m) => m.op)
    .join(',');

  const memo = new Map<string, Expr>();
  let accNode: Node | undefined;
  const ctxOf = (m: Node): TemplateCtx => ({
    b,
    attrs: m.attrs,
    inShapes: m.inputs.map((i) => bodyTypes.get(i)!.shape),
    inDTypes: m.inputs.map((i) => bodyTypes.get(i)!.dtype),
    outShape: bodyTypes.get(m)!.shape,
    outDType: bodyTypes.get(m)!.dtype,
  });
  const at = (m: Node, coords: readonly IExpr[]): Expr => {
    if (m === accNode) return b.cast(bodyTypes.get(m)!.dtype, b.acc()); // round the sum to the matmul dtype before the epilogue, as the reference does
    const key = `${m.id}@${coords.map((c) => c.key).join(',')}`;
    const hit = memo.get(key);
    if (hit !== undefined) return hit;
    let e: Expr;
    const p = params.get(m);
    if (p !== undefined) {
      const data = buffers[p.buf]!.value;
      e =
        data !== undefined && data.size === 1
          ? b.const(data.data[0]!)
          : b.load(p.buf, iadd(iconst(p.offset), ravel(coords, p.shape)));
    } else if (isOp(m, 'constant')) {
      e = b.const(m.attrs.value.data[0]!);
    } else {
      const t = templateOf(m) as LoopTemplate;
      e = b.cast(
        bodyTypes.get(m)!.dtype,
        t.expr((i, co) => at(m.inputs[i]!, co), coords, ctxOf(m)),
      );
    }
    memo.set(key, e);
    return e;
  };

  const size = sizeOf(outT.shape);
  const mm = members.find((m) => templateOf(m)?.kind === 'matmul');
  if (mm !== undefined && !sameShape(bodyTypes.get(mm)!.shape, outT.shape)) return undefined; // not a matmul with an epilogue
  if (mm !== undefined) {
    const t = templateOf(mm) as MatmulTemplate;
    const c = ctxOf(mm);
    const d = t.dims(c);
    const [bv, iv, jv, kv] = [newVar(d.batch), newVar(d.m), newVar(d.n), newVar(d.k)];
    const [B, I, J, K] = [ivar(bv), ivar(iv), ivar(jv), ivar(kv)];
    const aE = b.cast(
      c.inDTypes[0]!,
      t.aValue !== undefined
        ? t.aValue((k, co) => at(mm.inputs[k]!, co), B, I, K, c)
        : at(mm.inputs[0]!, t.a(B, I, K, c)),
    );
    const bE = b.cast(c.inDTypes[1]!, at(mm.inputs[1]!, t.b(B, K, J, c)));
    accNode = mm;
    const outCoords = t.out(B, I, J, c);
    // The epilogue runs at the matmul's output coordinates; the root has the matmul's shape (fusion guarantees it).
    const value = at(root, outCoords);
    const out = addBuf(outT.dtype, size, outRole);
    const sum =
      tile.f32 !== undefined &&
      c.inDTypes[0] === 'float32' &&
      c.inDTypes[1] === 'float32' &&
      bodyTypes.get(mm)!.dtype === 'float32'
        ? 'float32'
        : 'float64';
    // A convolution's window read cell by cell from its input (an indirect product), where the target has such a kernel.
    const ind = sum === 'float32' && tile.igemm !== undefined ? t.indirect?.(c) : undefined;
    const x = ind !== undefined ? params.get(mm.inputs[0]!) : undefined;
    const indirect =
      ind !== undefined && x !== undefined && buffers[x.buf]!.value?.size !== 1 && x.dtype === 'float32'
        ? { ...ind, buf: x.buf, offset: x.offset }
        : undefined;
    const { mr, nr } = indirect !== undefined ? tile.igemm! : sum === 'float32' ? tile.f32! : tile;
    // The indirect product's A: the input's cells, a row of zeros and the pointers (MP*mr per tap), or the packed panels.
    const aSize = d.batch * Math.ceil(d.m / mr) * mr * d.k;
    const packA = addBuf(sum, indirect !== undefined ? Math.max(aSize, indirectSize(indirect, mr)) : aSize, 'arena');
    const packB = addBuf(sum, d.batch * Math.ceil(d.n / nr) * nr * d.k, 'arena');
    return {
      step: {
        kind: 'matmul',
        label,
        batch: bv,
        m: iv,
        n: jv,
        k: kv,
        a: aE,
        b: bE,
        packA,
        packB,
        mr,
        nr,
        sum,
        ...(indirect !== undefined ? { indirect } : {}),
        out: { buf: out, index: ravel(outCoords, outT.shape), value, dtype: outT.dtype },
      },
      value: { buf: out, offset: 0, ...outT },
    };
  }

  const vars: Var[] = outT.shape.map((dim) => newVar(dim));
  const coords = vars.map(ivar);
  const value = at(root, coords);
  const index = ravel(coords, outT.shape);
  // A copy of a contiguous range of another value is that value (reshape, index, identity): alias it.
  if (
    outRole === 'temp' &&
    value.t === 'load' &&
    value.index.key === iadd(index, iconst(value.index.c - index.c)).key &&
    bufDTypes.get(value.buf) === outT.dtype
  ) {
    return { value: { buf: value.buf, offset: value.index.c - index.c, ...outT } };
  }
  const out = addBuf(outT.dtype, size, outRole);
  const step = collapseLoopKernel(
    { kind: 'loop', label, vars, stores: [{ buf: out, index, value, dtype: outT.dtype }] },
    b,
  );
  // a pooling alone (nothing fused into it): described for the targets with a form of their own (LoopKernel.pool)
  const pooled = members.filter((m) => m.op !== 'constant');
  const px = pooled.length === 1 && isOp(root, 'pool') ? params.get(root.inputs[0]!) : undefined;
  const pool =
    px !== undefined && isOp(root, 'pool')
      ? poolSpec(poolGeom(root.attrs, px.shape, outT.shape), false, px, undefined, out)
      : undefined;
  return { step: pool !== undefined ? { ...step, pool } : step, value: { buf: out, offset: 0, ...outT } };
}

/** The nodes of a kernel body: reachable from the root without passing through a param. */
function bodyMembers(root: Node, params: { has(n: Node): boolean }): Node[] {
  const out: Node[] = [];
  const seen = new Set<Node>();
  const stack = [root];
  while (stack.length > 0) {
    const n = stack.pop()!;
    if (seen.has(n) || params.has(n)) continue;
    seen.add(n);
    out.push(n);
    for (const i of n.inputs) stack.push(i);
  }
  return out.reverse();
}
