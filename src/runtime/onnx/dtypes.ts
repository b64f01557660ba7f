// theanine dtypes <-> ONNX TensorProto.DataType, and NDArray <-> TensorProto (raw_data,
// little-endian, as ONNX stores initializers).
import type { DType, TypedArray } from '../../ir/dtype.js';
import { NDArray, sizeOf } from '../../ir/ndarray.js';
import type { TensorJson } from './schema.js';
import { fromHalfBits, toHalfBits } from '../../ir/half.js';

export const ONNX_DTYPE: Readonly<Record<DType, number>> = {
  float32: 1,
  uint8: 2,
  int8: 3,
  int16: 5,
  int32: 6,
  int64: 7,
  bool: 9,
  float16: 10,
  float64: 11,
};
const FROM_ONNX = new Map<number, DType>(Object.entries(ONNX_DTYPE).map(([k, v]) => [v, k as DType]));

export function fromOnnxDType(code: number, what: string): DType {
  const d = FROM_ONNX.get(code);
  if (d === undefined)
    throw new Error(
      `importOnnx: ${what} has ONNX element type ${code}, which theanine has no dtype for (supported: ${[...FROM_ONNX.keys()].join(', ')})`,
    );
  return d;
}

/** A typed array as ONNX Runtime's tensors and raw_data hold a dtype's values. */
type WireArray = TypedArray | BigInt64Array | Uint16Array;

/** Each dtype's wire form: its values to the typed array, and raw_data's bytes back to the values. */
const WIRE: Record<DType, { to(d: ArrayLike<number>): WireArray; from(buf: ArrayBufferLike): ArrayLike<number> }> = {
  float32: { to: (d) => Float32Array.from(d), from: (b) => new Float32Array(b) },
  float64: { to: (d) => Float64Array.from(d), from: (b) => new Float64Array(b) },
  float16: { to: (d) => Uint16Array.from(d, toHalfBits), from: (b) => Array.from(new Uint16Array(b), fromHalfBits) },
  int8: { to: (d) => Int8Array.from(d), from: (b) => new Int8Array(b) },
  int16: { to: (d) => Int16Array.from(d), from: (b) => new Int16Array(b) },
  int32: { to: (d) => Int32Array.from(d), from: (b) => new Int32Array(b) },
  int64: { to: (d) => BigInt64Array.from(d, (x) => BigInt(x)), from: (b) => Array.from(new BigInt64Array(b), Number) },
  uint8: { to: (d) => Uint8Array.from(d), from: (b) => new Uint8Array(b) },
  bool: { to: (d) => Uint8Array.from(d), from: (b) => new Uint8Array(b) },
};

/** The values of `a` in the typed array ONNX Runtime and raw_data use for its dtype. */
export function onnxData(a: NDArray): WireArray {
  return WIRE[a.dtype].to(a.data);
}

export function tensorProto(name: string, a: NDArray): TensorJson {
  const data = onnxData(a);
  const raw = new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  return { name, dims: [...a.shape], dataType: ONNX_DTYPE[a.dtype], rawData: new Uint8Array(raw) };
}

/** An initializer or Constant tensor back to an NDArray (raw_data or the typed repeated fields). */
export function fromTensorProto(t: TensorJson, what: string): NDArray {
  const dtype = fromOnnxDType(t.dataType, what);
  const shape = t.dims.map(Number);
  const n = sizeOf(shape);
  const raw = t.rawData;
  if (raw !== undefined && raw.length > 0) {
    const buf = raw.buffer.slice(raw.byteOffset, raw.byteOffset + raw.byteLength);
    const vals = WIRE[dtype].from(buf);
    return new NDArray(Float64Array.from(vals), shape, dtype);
  }
  const field =
    dtype === 'float32'
      ? t.floatData
      : dtype === 'float64'
        ? t.doubleData
        : dtype === 'int64'
          ? t.int64Data
          : t.int32Data;
  const vals = (field ?? []).map(Number);
  if (vals.length !== n)
    throw new Error(`importOnnx: ${what} has ${vals.length} values for shape [${shape.join(', ')}]`);
  return new NDArray(dtype === 'float16' ? vals.map(fromHalfBits) : vals, shape, dtype);
}
