// Variables that live in WebGPU device buffers (the webgpu mode's counterpart of ../resident.ts).
// Once a webgpu function has uploaded or updated a variable, its cell's `value` becomes an
// accessor: reading it (get_value, another device, the interpreter) reads the device buffer back
// once and caches the host copy; writing it (set_value, a cpu function's update) frees the device
// copy. webgpu functions bind the device buffer directly, so a training loop uploads its weights
// once and never reads them back.
import type { DType } from '../../../ir/dtype.js';
import type { NDArray } from '../../../ir/ndarray.js';
import type { VariableCell } from '../../../ir/node.js';
import type { DeviceResult } from '../../function.js';
import { storageBytes, storageOf } from '../../../codegen/wgsl/scalar.js';
import { fromDevice, paddedBytes } from './half.js';
import { freeWith, unfreeWith, webgpu, type Reply } from './session.js';

interface Resident {
  dev: number | undefined;
  host: NDArray | undefined;
  shape: readonly number[];
  dtype: DType;
  /** The token of the device buffer's free-on-collect registration. */
  token: object | undefined;
}

const residents = new WeakMap<VariableCell, Resident>();

function free(r: Resident): void {
  if (r.dev === undefined) return;
  webgpu().worker.post({ kind: 'free', ids: [r.dev], quiet: true });
  unfreeWith(r.token!);
  r.dev = undefined;
  r.token = undefined;
}

const readRequest = (r: Resident): Record<string, unknown> => ({
  kind: 'run',
  reads: [
    {
      id: r.dev!,
      bytes: paddedBytes(r.shape.reduce((a, d) => a * d, 1) * storageBytes(storageOf(r.dtype, webgpu().f16))),
    },
  ],
});

function fromReply(r: Resident, reply: Reply): NDArray {
  if (!reply.ok) throw new Error(`gpu:webgpu: reading a variable back failed: ${reply.error}`);
  const n = r.shape.reduce((a, d) => a * d, 1);
  return fromDevice(r.dtype, storageOf(r.dtype, webgpu().f16), reply.data![0]!, n).reshape(r.shape);
}

function readBack(r: Resident): NDArray {
  return fromReply(
    r,
    webgpu().worker.call(
      readRequest(r),
      "reading a variable's value back from the device (K.get_value, or a function on another device)",
    ),
  );
}

/**
 * A variable's current value without blocking: a device copy is read back with the device's
 * promise (a page's only way; K.get_value_async), kept as the host copy while the device's is current.
 */
export async function cellValueAsync(cell: VariableCell): Promise<NDArray> {
  const r = residents.get(cell);
  if (r === undefined || r.host !== undefined || r.dev === undefined) return cell.value;
  const dev = r.dev;
  const v = fromReply(r, await webgpu().worker.callAsync(readRequest(r)));
  if (r.dev === dev && r.host === undefined) r.host = v; // (unless an update or set_value came meanwhile)
  return v;
}

function attach(cell: VariableCell): Resident {
  const have = residents.get(cell);
  if (have !== undefined) return have;
  const v = cell.value;
  const res: Resident = { dev: undefined, host: v, shape: v.shape, dtype: v.dtype, token: undefined };
  Object.defineProperty(cell, 'value', {
    configurable: true,
    enumerable: true,
    get: (): NDArray => {
      res.host ??= readBack(res);
      return res.host;
    },
    set: (nd: NDArray) => {
      free(res);
      res.host = nd;
      res.shape = nd.shape;
      res.dtype = nd.dtype;
    },
  });
  residents.set(cell, res);
  return res;
}

function own(cell: VariableCell, r: Resident, id: number): void {
  free(r);
  r.dev = id;
  r.token = {};
  freeWith(cell, id, r.token);
}

/** The variable's device buffer, when it has a current one. */
export function residentId(cell: VariableCell): number | undefined {
  return residents.get(cell)?.dev;
}

/** Records that device buffer `id` now holds the variable's current host value (uploaded in this call). */
export function uploadVariable(cell: VariableCell, id: number): void {
  const r = attach(cell);
  const host = r.host;
  own(cell, r, id);
  r.host = host;
}

/** K.function's form of an update value on the device. */
export function webDeviceResult(id: number, shape: readonly number[], dtype: DType): DeviceResult {
  let first = true;
  return {
    shape,
    dtype,
    storeInto(cell) {
      // A second variable updated with the same value gets a host copy (one owner per buffer).
      if (!first) {
        cell.value = readBack({ dev: id, host: undefined, shape, dtype, token: undefined });
        return;
      }
      first = false;
      const r = attach(cell);
      own(cell, r, id);
      r.host = undefined;
      r.shape = shape;
      r.dtype = dtype;
    },
  };
}
