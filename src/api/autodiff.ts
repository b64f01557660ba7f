// The `autodiff` namespace (import { autodiff } from 'theanine'; src/index.ts imports this module
// as it): each function of src/autodiff/public traced as the K functions are (src/api/trace.ts),
// so with tracing on the nodes it builds record the call, and tangent and gradient nodes the
// forward node they differentiate. Theano's names, JAX's as aliases.
import * as fns from '../autodiff/public/index.js';
import { scan_checkpoints as scanCheckpoints } from './scan-checkpoints.js';
import { traced } from './trace.js';

export type { ScanCheckpointOptions } from './scan-checkpoints.js';
export type {
  RopOptions,
  GradOptions,
  JacobianOptions,
  CustomGrad,
  VmapAxes,
  Batchable,
} from '../autodiff/public/index.js';

const t = <F extends (...args: never[]) => unknown>(name: string, f: F): F => traced(`autodiff.${name}`, f);

export const Rop = t('Rop', fns.Rop);
export const jvp = t('jvp', fns.jvp);
export const Lop = t('Lop', fns.Lop);
export const vjp = t('vjp', fns.vjp);
export const grad = t('grad', fns.grad);
export const subgraph_grad = t('subgraph_grad', fns.subgraph_grad);
export const jacobian = t('jacobian', fns.jacobian);
export const jacrev = t('jacrev', fns.jacrev);
export const jacfwd = t('jacfwd', fns.jacfwd);
export const hessian = t('hessian', fns.hessian);
export const hessian_vector_product = t('hessian_vector_product', fns.hessian_vector_product);
export const disconnected_grad = t('disconnected_grad', fns.disconnected_grad);
export const zero_grad = t('zero_grad', fns.zero_grad);
export const grad_clip = t('grad_clip', fns.grad_clip);
export const grad_scale = t('grad_scale', fns.grad_scale);
// These take the user's graph-building function, which runs as user code (its K calls record).
export const checkpoint = traced('autodiff.checkpoint', fns.checkpoint, true);
export const custom_gradient = traced('autodiff.custom_gradient', fns.custom_gradient, true);
export const vmap = traced('autodiff.vmap', fns.vmap, true);
// K.rnn's contract with Theano's scan_checkpoints policy (src/api/scan-checkpoints.ts).
export const scan_checkpoints = traced('autodiff.scan_checkpoints', scanCheckpoints, true);
