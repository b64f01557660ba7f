// Running ONNX models in tests: ONNX Runtime on exported bytes (independent of the onnx backend's
// executor), and the structural checks that stand in for onnx.checker (there is no Python here):
// every node's op_type is an ai.onnx operator of the model's opset, through Loop bodies.
import { expect } from 'chai';
import { NDArray } from '../../src/ir/ndarray.js';
import type { DType } from '../../src/ir/dtype.js';
import { OrtSession, type WireTensor } from '../../src/runtime/onnx/session.js';
import { decodeModel, type GraphJson, type ModelJson } from '../../src/runtime/onnx/schema.js';
import { ONNX_OPERATORS } from '../../src/runtime/onnx/operators.js';
import { onnxData } from '../../src/runtime/onnx/dtypes.js';

const ORT_TYPE: Partial<Record<DType, string>> = { float32: 'float32', float64: 'float64', int32: 'int32', int64: 'int64', uint8: 'uint8', bool: 'bool' };

/** Runs `bytes` in a fresh ONNX Runtime session (ORT validates types and shapes when it loads the model). */
export function runOnnx(bytes: Uint8Array, feeds: Record<string, NDArray>, fetches: readonly string[]): NDArray[] {
  const s = new OrtSession(bytes);
  const wire: Record<string, WireTensor> = {};
  for (const [k, v] of Object.entries(feeds)) wire[k] = { type: ORT_TYPE[v.dtype]!, data: onnxData(v), dims: [...v.shape] };
  const out = s.run(wire, fetches);
  return fetches.map((k) => {
    const t = out[k]!;
    const data = t.type === 'int64' ? Float64Array.from(t.data as unknown as BigInt64Array, Number) : (t.data as unknown as Float32Array);
    return new NDArray(data, [...t.dims], t.type as DType);
  });
}

function graphsOf(g: GraphJson): GraphJson[] {
  return [g, ...g.node.flatMap((n) => (n.attribute ?? []).flatMap((a) => (a.g !== undefined && a.g !== null ? graphsOf(a.g) : [])))];
}

/** Every node (Loop bodies included) is an ai.onnx operator that exists at the model's opset. */
export function checkOperators(model: ModelJson): Set<string> {
  const opset = Number(model.opsetImport.find((o) => o.domain === '')!.version);
  const used = new Set<string>();
  for (const g of graphsOf(model.graph)) {
    for (const n of g.node) {
      const since = ONNX_OPERATORS[n.opType];
      expect(since, `op_type ${n.opType} is an ai.onnx operator`).to.be.a('number');
      expect(since!, `${n.opType} exists at opset ${opset}`).to.be.at.most(opset);
      expect(n.domain ?? '', `${n.opType}'s domain`).to.equal('');
      used.add(n.opType);
    }
  }
  return used;
}

export function decoded(bytes: Uint8Array): ModelJson {
  return decodeModel(bytes);
}
