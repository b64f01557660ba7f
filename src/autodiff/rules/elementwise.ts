// Gradient rules of elementwise ops. Each cotangent is reduced back over broadcast axes (sumTo).
// Formulas use the node's own output where that is cheaper (exp, sqrt, tanh, sigmoid).
import type { elementwiseOps } from '../../ir/ops/elementwise.js';
import { add, cast, div, mul, neg, op, sub, sumTo, where, scalar } from '../ops.js';
import type { GradRule } from './types.js';
import type { Node } from '../../ir/node.js';
import type { TangentRule } from '../tangent/types.js';

type Name = keyof typeof elementwiseOps;

const unary =
  (
    f: (x: ReturnType<typeof op>, g: ReturnType<typeof op>, out: ReturnType<typeof op>) => ReturnType<typeof op>,
  ): GradRule =>
  (node, g) => [f(node.inputs[0]!, g, node)];

/** Step functions (floor, ceil, round, sign) have zero derivative almost everywhere (Theano). */
const zero: GradRule = (node, g) => [mul(g, scalar(0, g.dtype))].map((z) => sumTo(z, node.inputs[0]!));

/** The comparisons, logical ops and isnan: bool results, with neither a gradient nor a tangent (both tables spread this). */
export const NO_DERIVATIVE = {
  equal: 'none',
  not_equal: 'none',
  greater: 'none',
  greater_equal: 'none',
  less: 'none',
  less_equal: 'none',
  logical_and: 'none',
  logical_or: 'none',
  logical_not: 'none',
  isnan: 'none',
} as const;

export const elementwiseGrads: Record<Name, GradRule | 'none'> = {
  add: (n, g) => [sumTo(g, n.inputs[0]!), sumTo(g, n.inputs[1]!)],
  sub: (n, g) => [sumTo(g, n.inputs[0]!), sumTo(neg(g), n.inputs[1]!)],
  mul: (n, g) => {
    const [x, y] = n.inputs as [ReturnType<typeof op>, ReturnType<typeof op>];
    return [sumTo(mul(g, y), x), sumTo(mul(g, x), y)];
  },
  div: (n, g) => {
    const [x, y] = n.inputs as [ReturnType<typeof op>, ReturnType<typeof op>];
    const gx = div(g, y);
    return [sumTo(gx, x), sumTo(neg(mul(gx, n)), y)]; // d(x/y)/dy = -(x/y)/y
  },
  pow: (n, g) => {
    const [x, a] = n.inputs as [ReturnType<typeof op>, ReturnType<typeof op>];
    // d/dx x^a = a x^(a-1); d/da x^a = x^a log x (only built into graphs where a needs a gradient)
    const gx = mul(g, mul(a, op('pow', x, sub(a, 1))));
    const ga = mul(g, mul(n, op('log', x)));
    return [sumTo(gx, x), sumTo(ga, a)];
  },
  mod: (n, g) => {
    const [x, y] = n.inputs as [ReturnType<typeof op>, ReturnType<typeof op>];
    return [sumTo(g, x), sumTo(neg(mul(g, op('floor', div(x, y)))), y)];
  },
  // TensorFlow's convention: ties send the gradient to x.
  maximum: (n, g) => {
    const [x, y] = n.inputs as [ReturnType<typeof op>, ReturnType<typeof op>];
    const c = op('greater_equal', x, y);
    return [sumTo(where(c, g, 0), x), sumTo(where(c, 0, g), y)];
  },
  minimum: (n, g) => {
    const [x, y] = n.inputs as [ReturnType<typeof op>, ReturnType<typeof op>];
    const c = op('less_equal', x, y);
    return [sumTo(where(c, g, 0), x), sumTo(where(c, 0, g), y)];
  },
  neg: unary((_, g) => neg(g)),
  abs: unary((x, g) => mul(g, op('sign', x))),
  sign: zero,
  square: unary((x, g) => mul(g, mul(x, 2))),
  floor: zero,
  ceil: zero,
  round: zero,
  sqrt: unary((_, g, out) => div(mul(g, 0.5), out)),
  exp: unary((_, g, out) => mul(g, out)),
  log: unary((x, g) => div(g, x)),
  log1p: unary((x, g) => div(g, add(x, 1))),
  expm1: unary((_, g, out) => mul(g, add(out, 1))),
  sin: unary((x, g) => mul(g, op('cos', x))),
  cos: unary((x, g) => neg(mul(g, op('sin', x)))),
  tanh: unary((_, g, out) => mul(g, sub(1, mul(out, out)))),
  sigmoid: unary((_, g, out) => mul(g, mul(out, sub(1, out)))),
  softplus: unary((x, g) => mul(g, op('sigmoid', x))),
  // d erf(x)/dx = 2/sqrt(pi) exp(-x^2)
  erf: unary((x, g) => mul(g, mul(op('exp', neg(mul(x, x))), 2 / Math.sqrt(Math.PI)))),
  reciprocal: unary((_, g, out) => neg(mul(g, mul(out, out)))),
  ...NO_DERIVATIVE,
};

export const whereGrad: GradRule = (n, g) => {
  const [c, a, b] = n.inputs as [ReturnType<typeof op>, ReturnType<typeof op>, ReturnType<typeof op>];
  return [null, sumTo(where(c, g, 0), a), sumTo(where(c, 0, g), b)];
};

export const castGrad: GradRule = (n, g) => [cast(g, n.inputs[0]!.dtype)];

/** The unary float ops: functions of one value, whose Jacobian is diagonal. */
const DIAGONAL = [
  'sqrt',
  'exp',
  'log',
  'log1p',
  'expm1',
  'sin',
  'cos',
  'tanh',
  'sigmoid',
  'softplus',
  'erf',
  'reciprocal',
] as const;

/**
 * Their tangent rules (forward mode, ../tangent/): with a diagonal Jacobian the tangent is the
 * gradient rule applied to the tangent, so each derivative is written once, above.
 */
export const diagonalTangents = Object.fromEntries(
  DIAGONAL.map((name) => {
    const rule = elementwiseGrads[name];
    if (rule === 'none') throw new Error(`internal: ${name} has no gradient rule`);
    return [name, (n: Node, [t]: readonly (Node | null | undefined)[]) => (t ? (rule(n, t)[0] ?? null) : null)];
  }),
) as Record<(typeof DIAGONAL)[number], TangentRule>;
