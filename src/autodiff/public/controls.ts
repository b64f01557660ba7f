// Gradient controls: ops that compute the identity forwards and change only what flows backwards
// (Theano's disconnected_grad, zero_grad, grad_clip, grad_scale).
import { apply } from '../../ir/build.js';
import { ValueError } from '../../ir/errors.js';
import type { Node } from '../../ir/node.js';
import { listOf } from './args.js';

function one(fn: string, x: Node): Node {
  return listOf(fn, 'x', x)[0]!;
}

function number(fn: string, arg: string, v: unknown): number {
  if (typeof v !== 'number' || !Number.isFinite(v))
    throw new TypeError(`${fn}: ${arg} must be a finite number, got ${String(v)}`);
  return v;
}

/**
 * x, with no gradient flowing back through it: wrt reached only through it are disconnected
 * (autodiff.grad raises for them by default), as Theano's disconnected_grad. Its tangent is zero.
 */
export function disconnected_grad(x: Node): Node {
  return apply('stop_gradient', [one('autodiff.disconnected_grad', x)], {}, 'autodiff.disconnected_grad');
}

/** x, with a zero gradient flowing back (still connected, unlike disconnected_grad) and a zero tangent (Theano's zero_grad). */
export function zero_grad(x: Node): Node {
  return apply('grad_scale', [one('autodiff.zero_grad', x)], { scale: 0 }, 'autodiff.zero_grad');
}

/** x, with the gradient flowing back through it clipped elementwise to [lo, hi] (Theano's grad_clip). */
export function grad_clip(x: Node, lo: number, hi: number): Node {
  const fn = 'autodiff.grad_clip';
  const [l, h] = [number(fn, 'lo', lo), number(fn, 'hi', hi)];
  if (!(l <= h)) throw new ValueError(`${fn}: lo (${l}) must not exceed hi (${h})`);
  return apply('grad_clip', [one(fn, x)], { lo: l, hi: h }, fn);
}

/** x, with the gradient flowing back through it multiplied by `scale` (Theano's grad_scale); its tangent is scaled too. */
export function grad_scale(x: Node, scale: number): Node {
  const fn = 'autodiff.grad_scale';
  return apply('grad_scale', [one(fn, x)], { scale: number(fn, 'scale', scale) }, fn);
}
