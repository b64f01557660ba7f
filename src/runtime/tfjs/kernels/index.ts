// Every op's TensorFlow.js kernel, by op name. `TfTable` is `Record<OpName, ...>`: an op added
// to src/ir/registry.ts without an entry here is a type error. Ops tfjs lacks are composed
// from tfjs ops in their family file, never from the NDArray reference implementations.
import type { TfTable } from '../types.js';
import { coreKernels } from './core.js';
import { elementwiseKernels } from './elementwise.js';
import { gradKernels } from './grad.js';
import { reduceKernels } from './reduce.js';
import { miscKernels } from './misc.js';
import { shapeKernels } from './shape.js';
import { convKernels } from './conv.js';
import { controlKernels } from './control.js';
import { ctcKernels } from './ctc.js';
import { ctcTheanoKernels } from './ctc-theano.js';
import { ctcDecodeKernels } from './ctc-decode.js';
import { optimizerKernels } from './optimizer.js';
import { sizedKernels } from './sized.js';

export const tfKernels: TfTable = {
  ...coreKernels,
  ...elementwiseKernels,
  ...reduceKernels,
  ...gradKernels,
  ...miscKernels,
  ...shapeKernels,
  ...convKernels,
  ...controlKernels,
  ...ctcKernels,
  ...ctcTheanoKernels,
  ...ctcDecodeKernels,
  ...optimizerKernels,
  ...sizedKernels,
};
