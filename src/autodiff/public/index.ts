// The `autodiff` namespace (import { autodiff } from 'theanine'): Theano's names, JAX's as aliases.
// One line per module; each function lives in its own file.
export { Rop, jvp, type RopOptions } from './forward.js';
export { Lop, vjp, grad, subgraph_grad, type GradOptions } from './reverse.js';
export { jacobian, jacrev, jacfwd, hessian, hessian_vector_product, type JacobianOptions } from './jacobian.js';
export { disconnected_grad, zero_grad, grad_clip, grad_scale } from './controls.js';
export { checkpoint } from './checkpoint.js';
export { custom_gradient, type CustomGrad } from './custom.js';
export { vmap, type Axes as VmapAxes, type Batchable } from '../vmap/index.js';
