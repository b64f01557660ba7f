// Every built-in op, by name. `OpName` is the key set, so tables keyed by op name elsewhere
// (gradient rules, codegen templates) are typed `Record<OpName, ...>` and a missing entry is a type error.
import type { OpDef } from './op.js';
import type { Node } from './node.js';
import { elementwiseOps, whereOp } from './ops/elementwise.js';
import { argOps, reduceOps } from './ops/reduce.js';
import { convOps } from './ops/conv.js';
import { gradOps } from './ops/adjoint.js';
import { coreOps } from './ops/core.js';
import { cumulativeOps, inTopKOp, printOp } from './ops/misc.js';
import { randomOps } from './ops/random.js';
import { shapeOps } from './ops/shape.js';
import { dimsOps } from './ops/dims.js';
import { sizedOps } from './ops/sized.js';
import { linalgOps } from './ops/linalg.js';
import { shapeGradOps } from './ops/shape-adjoint.js';
import { scanArgOp, scanOp, tupleGetOp } from './ops/control.js';
import { ctcOps } from './ops/ctc.js';
import { ctcTheanoOps } from './ops/ctc-theano.js';
import { ctcDecodeOps } from './ops/ctc-decode.js';
import { fusedOpWith, softmaxCrossEntropyOp } from './ops/introduced.js';

export const builtinOps = {
  ...coreOps,
  where: whereOp,
  ...elementwiseOps,
  ...reduceOps,
  ...argOps,
  ...convOps,
  ...shapeOps,
  ...dimsOps,
  ...sizedOps,
  ...linalgOps,
  ...shapeGradOps,
  ...gradOps,
  ...cumulativeOps,
  in_top_k: inTopKOp,
  print: printOp,
  ...randomOps,
  scan_arg: scanArgOp,
  scan: scanOp,
  tuple_get: tupleGetOp,
  ...ctcOps,
  ...ctcTheanoOps,
  ...ctcDecodeOps,
  fused: fusedOpWith((name) => getOp(name)),
  softmax_cross_entropy: softmaxCrossEntropyOp,
} as const;

export type OpName = keyof typeof builtinOps;

/** Ops defined at run time (user ops); they live beside the built-ins under names of their own. */
const userOps = new Map<string, OpDef>();

export function registerOp(def: OpDef): void {
  if (def.name in builtinOps || userOps.has(def.name))
    throw new Error(`defineOp: an op named ${JSON.stringify(def.name)} already exists`);
  userOps.set(def.name, def);
}

export function isBuiltin(name: string): name is OpName {
  return Object.prototype.hasOwnProperty.call(builtinOps, name);
}

/** An op by name, as the graph sees it: attrs are the node's (each op's own record type is in AttrsOf). */
export function getOp(name: string): OpDef {
  // The one place an op's own attrs type is widened to the node's: inference and implementations
  // receive the node's attrs, which the op built with its own record.
  const d = isBuiltin(name) ? (builtinOps[name] as OpDef) : userOps.get(name);
  if (d === undefined) throw new Error(`unknown op ${JSON.stringify(name)}`);
  return d;
}

/** Whether an op of that name exists now (built-in, or a user op defined so far). */
export function hasOp(name: string): boolean {
  return isBuiltin(name) || userOps.has(name);
}

/** The attrs record of built-in op `K`, as its definition types them (for a union of ops, the union of theirs). */
export type AttrsOf<K extends OpName> = K extends OpName
  ? (typeof builtinOps)[K] extends OpDef<infer A>
    ? A
    : never
  : never;

/** A node of built-in op `K`, its attrs typed. */
export type OpNode<K extends OpName> = Node & { readonly op: K; readonly attrs: AttrsOf<K> };

/** Whether `n` is a node of one of `ops` (and so has their attrs). */
export function isOp<K extends OpName>(n: Node, ...ops: readonly K[]): n is OpNode<K> {
  return (ops as readonly string[]).includes(n.op);
}
