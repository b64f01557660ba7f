// Every op's ONNX translation, by op name. `OnnxTable` is `Record<OpName, ...>`: an op added to
// src/ir/registry.ts without an entry here (a translation, or the reason there is none) is a
// type error.
import type { OnnxTable } from './types.js';
import { coreTranslations } from './core.js';
import { elementwiseTranslations } from './elementwise.js';
import { shapeTranslations } from './shape.js';
import { convTranslations } from './conv.js';
import { miscTranslations } from './misc.js';
import { sizedTranslations } from './sized.js';

export const onnxTranslations: OnnxTable = {
  ...coreTranslations,
  ...elementwiseTranslations,
  ...shapeTranslations,
  ...convTranslations,
  ...miscTranslations,
  ...sizedTranslations,
};
