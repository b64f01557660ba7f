// The `autodiff` namespace (import { autodiff } from 'theanine'): vmap's part of it.
export { vmap, type Axes, type Batchable } from '../autodiff/vmap/index.js';
