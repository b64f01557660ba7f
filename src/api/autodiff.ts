// The `autodiff` namespace as the package exports it: each function of src/autodiff/public traced
// as the K functions are (src/api/trace.ts), so with tracing on the nodes it builds record the
// call, and tangent and gradient nodes the forward node they differentiate.
import * as fns from '../autodiff/public/index.js';
import { traced } from './trace.js';

type Fns = typeof fns;

/** Functions that take a graph-building function of the user's, which runs as user code. */
const TAKES_CALLBACK = new Set(['vmap']);

export const autodiff: Fns = Object.fromEntries(
  Object.entries(fns).map(([name, f]) => [name, typeof f === 'function' ? traced(`autodiff.${name}`, f as (...a: never[]) => unknown, TAKES_CALLBACK.has(name)) : f]),
) as unknown as Fns;
