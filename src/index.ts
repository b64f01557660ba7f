// theanine: the Keras backend API for TypeScript, as a Theano-like graph compiler.
import * as backend from './api/backend.js';
import * as autodiff from './api/autodiff.js';

export { backend, autodiff };
export { NDArray } from './ir/ndarray.js';
export type { DType } from './ir/dtype.js';
export { Node as Tensor } from './ir/node.js';
export { ValueError, ShapeError } from './ir/errors.js';
export { ConfigError, set_backend, setEnvironment, ENVIRONMENT_SWITCHES } from './api/config.js';
export type { EnvironmentSwitch } from './api/config.js';
export { debugprint, dot, svg } from './api/debug.js';
export type { DebugprintOptions } from './api/debug.js';
export { setTrace, traceEnabled } from './api/trace.js';
export type { Provenance, ProvenanceJson, Site } from './ir/provenance.js';
export type { DotOptions, DotCluster, InnerGraph } from './ir/dot.js';
export { defineOp } from './api/extend.js';
export type { UserOp, UserOpSpec } from './api/extend.js';
export { definePass, undefinePass, optimize, listPasses, passNames, optimizer } from './api/passes.js';
export type {
  PassOptions,
  PassRewrite,
  PassSelection,
  UserPass,
  OptimizeOptions,
  OptimizedGraph,
  PassInfo,
  Graph,
} from './api/passes.js';
export { verify_grad, GradientError } from './api/gradients.js';
export type { VerifyGradOptions } from './api/gradients.js';
export type { CompiledFunction } from './runtime/function.js';
export type { OptimizerLevel } from './passes/pipeline.js';
export { ExportError } from './runtime/export/module.js';
export type { ExportOptions, ExportedModule } from './runtime/export/module.js';
export { FallbackError, NO_KERNEL_YET } from './runtime/fallback.js';
export { BadOptimization } from './passes/check.js';
export { BadKernel, NonFiniteError } from './runtime/check.js';
export type { FunctionProfile, KernelProfile, OpProfile, CompileProfile } from './runtime/profile.js';
export type { FallbackMode, FallbackOption } from './runtime/fallback.js';
export { importOnnx, OnnxImportError, ONNX_IMPORTABLE } from './api/onnx.js';
export type { ImportedOnnx } from './api/onnx.js';
export { OnnxExportError } from './runtime/onnx/builder.js';
export type { OnnxExportOptions } from './runtime/onnx/export.js';
export { provideModule } from './platform/types.js';
export { configuredTarget, describeTarget, GPU_MODE_CHOICES, setWarningSink } from './api/runtime-info.js';
export type { BackendName, DeviceName, WarningSink } from './api/runtime-info.js';
