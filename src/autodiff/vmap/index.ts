// The public face of vmap (exported in the `autodiff` namespace).
export { vmap, type Axes, type Batchable } from './vmap.js';
export { batchRules } from './rules/index.js';
