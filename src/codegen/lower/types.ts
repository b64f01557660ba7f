// The types lowering's modules share (lower.ts and lower-scan.ts), in a module of their own so
// that neither imports the other for them.
import type { DType } from '../../ir/dtype.js';
import type { Node } from '../../ir/node.js';
import type { ScanBody } from '../../ir/scanbody.js';

/**
 * A shape that stays unknown with every input shape known (an op whose output size depends on
 * values), or shapes that do not fit (`invalid`: the reference interpreter then reports the error).
 */
export class DynamicShapeError extends Error {
  constructor(
    readonly op: string,
    message: string,
    readonly invalid = false,
  ) {
    super(`${op}: ${message}`);
  }
}

export interface LowerSpec {
  readonly targets: readonly Node[];
  /** Placeholders (and a fed learning phase) by input position. */
  readonly inputSlot: ReadonlyMap<Node, number>;
  readonly variableSlot: ReadonlyMap<Node, number>;
  readonly inputShapes: readonly (readonly number[])[];
  /**
   * Register tile of the matmul micro-kernel (the cpu renderer's choice). With `f32`, products of
   * float32 operands to a float32 result sum in float32 (matmul precision "float32"), packed
   * into float32 panels of that tile; without it every product sums in float64.
   */
  readonly tile: {
    readonly mr: number;
    readonly nr: number;
    readonly f32?: { readonly mr: number; readonly nr: number };
    /** With `f32`: the tile of float32 convolutions summed through an indirection buffer (MatmulKernel.indirect), where the target has that kernel. */
    readonly igemm?: { readonly mr: number; readonly nr: number };
  };
  /** Optimizes a Scan body's results (the pass pipeline); without it Scans run as externs. */
  readonly optimizeBody?: (body: ScanBody) => readonly Node[];
  /**
   * For a device that runs one thread per output element (the gpu): loops of at most this many
   * iterations per element may replace a scan or a scatter by a gather (lower-data.ts), so each
   * element is computed on its own.
   */
  readonly gatherLoops?: number;
}

export interface Concrete {
  readonly shape: readonly number[];
  readonly dtype: DType;
  readonly items?: readonly Concrete[];
}
