// Shapes at specialisation time: a function compiled for concrete input shapes
// knows every shape in its graph, through Scan items, tuple_get, tile, reshape with -1 and values
// computed from K.shape, so Keras' own graphs with the batch (and the time axis) unknown compile
// with no interpreter fallback. Numbers are checked against the reference interpreter.
import { expect } from 'chai';
import { backend as K, NDArray, type Tensor } from '../../src/index.js';
import type { FunctionOptions } from '../../src/api/function.js';
import { expectClose } from '../helpers/assert.js';
import { grid } from '../helpers/values.js';
import { targets } from '../helpers/targets.js';
import { emptyFolder, runCalls, typecheck, writeModules } from '../helpers/exported.js';

const UNITS = 6;
const FEAT = 4;

/**
 * Keras' LSTM as its layer writes it: one kernel, one recurrent kernel and one bias sliced into
 * four gates, the initial state tiled from the inputs' batch axis, K.rnn over one Scan node, a loss,
 * K.gradients and an SGD update. `batch` / `steps` null leave those axes unknown.
 */
function kerasLstm(batch: number | null, steps: number | null, masked: boolean) {
  const x = K.placeholder([batch, steps, FEAT], null, 'float32', false, 'x');
  const mask = K.placeholder([batch, steps], null, 'float32', false, 'mask');
  const W = K.variable(grid([FEAT, 4 * UNITS], 1, 'float32').astype('float32'), 'float32', 'kernel');
  const U = K.variable(grid([UNITS, 4 * UNITS], 2, 'float32'), 'float32', 'recurrent_kernel');
  const b = K.variable(grid([4 * UNITS], 3, 'float32'), 'float32', 'bias');
  const gate = (z: Tensor, k: number) => K.slice(z, [0, k * UNITS], [-1, UNITS]);
  const step = (xt: Tensor, [h, c]: Tensor[]): [Tensor, Tensor[]] => {
    const z = K.bias_add(K.add(K.dot(xt, W), K.dot(h!, U)), b);
    const i = K.sigmoid(gate(z, 0));
    const f = K.sigmoid(gate(z, 1));
    const cNew = K.add(K.multiply(f, c!), K.multiply(i, K.tanh(gate(z, 2))));
    const hNew = K.multiply(K.sigmoid(gate(z, 3)), K.tanh(cNew));
    return [hNew, [hNew, cNew]];
  };
  // Keras' RNN.get_initial_state
  const init = K.tile(K.expand_dims(K.sum(K.zeros_like(x), [1, 2]), 1), [1, UNITS]);
  const [last, outs] = K.rnn(step, x, [init, init], { mask: masked ? mask : null });
  const loss = K.add(K.mean(K.square(last)), K.mean(outs));
  const grads = K.gradients(loss, [W, U, b]);
  const updates = [W, U, b].map((v, k) => [v, K.subtract(v, K.multiply(grads[k]!, 0.1))] as [Tensor, Tensor]);
  const inputs = masked ? [x, mask] : [x];
  return {
    vars: [W, U, b],
    fn: (opts: FunctionOptions) => K.function(inputs, [loss, outs, ...grads], updates, opts),
  };
}

function lstmValues(batch: number, steps: number, masked: boolean): NDArray[] {
  const x = grid([batch, steps, FEAT], 7, 'float32');
  const m = new NDArray(Float32Array.from({ length: batch * steps }, (_, i) => (i % steps < steps - (i % 3) ? 1 : 0)), [batch, steps], 'float32');
  return masked ? [x, m] : [x];
}

/** Runs one training step with `opts` and with the reference interpreter; both must agree. */
function checkLstm(batch: number | null, steps: number | null, masked: boolean, opts: FunctionOptions, tol: { atol: number; rtol: number }) {
  const vals = lstmValues(3, 5, masked);
  const a = kerasLstm(batch, steps, masked);
  const f = a.fn(opts);
  const got = f(vals);
  const after = a.vars.map((v) => K.get_value(v));
  const r = kerasLstm(batch, steps, masked);
  const want = r.fn({ optimizer: 'none' })(vals);
  got.forEach((g, i) => expectClose(g, want[i]!, tol, `output ${i}`));
  after.forEach((v, i) => expectClose(v, K.get_value(r.vars[i]!), tol, `updated variable ${i}`));
  return f;
}

describe('runtime: shapes at specialisation', () => {
  // the compiler's targets (the other backends run the graph op by op)
  for (const t of targets.filter((t) => t.options.backend === undefined && t.options.optimizer !== 'none')) {
    const tol = { atol: Math.max(t.tol.atol, 1e-5), rtol: Math.max(t.tol.rtol, 1e-4) };
    for (const [batch, steps, masked] of [[null, 5, false], [null, null, false], [null, null, true]] as const) {
      it(`${t.name}: Keras' LSTM, batch ${batch ?? 'unknown'}, time ${steps ?? 'unknown'}${masked ? ', masked' : ''}: forward, gradients and updates compile with no fallback`, () => {
        const f = checkLstm(batch, steps, masked, t.options, tol);
        const src = f.source();
        expect(src).to.not.match(/not compiled|reference interpreter|on the host|\bextern\b/);
      });
    }
  }

  it('exportModule: the LSTM training step (batch and time unknown, masked), and TimeDistributed + Conv2DTranspose sizes from K.shape; the modules match the live functions', function () {
    this.timeout(120000);
    const vals = lstmValues(3, 5, true);
    const a = kerasLstm(null, null, true);
    const f = a.fn({ fallback: 'error' });
    const before = a.vars.map((v) => K.get_value(v));
    const live = f(vals);
    a.vars.forEach((v, i) => K.set_value(v, before[i]!)); // the module starts from the same weights
    const m = f.exportModule({ name: 'lstmStep' });
    expect(m.source).to.match(/for \(let k = 0; k < 5; k\+\+\)/); // the Scan is a loop
    // Keras' TimeDistributed reshape and Conv2DTranspose with output_shape from K.shape: sized ops, static in the module
    const x = K.placeholder([null, null, null, 2], null, 'float32', false, 'img');
    const s = K.shape(x);
    const up = K.conv2d_transpose(x, K.constant(grid([3, 3, 3, 2], 12, 'float32')), [s.get(0), s.get(1).mul(2), s.get(2).mul(2), 3], [2, 2], 'same');
    const td = K.reshape(K.dot(K.reshape(up, [-1, 3]), K.constant(grid([3, 4], 13, 'float32'))), [-1, K.shape(up).get(1), K.shape(up).get(2), 4]);
    const g = K.function([x], [td], [], { fallback: 'error' });
    const xv = grid([2, 3, 2, 2], 14, 'float32');
    const liveG = g([xv]);
    const mg = g.exportModule({ name: 'upsample' });
    const dir = emptyFolder();
    writeModules(dir, [m, mg]);
    typecheck(dir, [m, mg]);
    const [out, outG] = runCalls(dir, [{ module: 'lstmStep', inputs: vals }, { module: 'upsample', inputs: [xv] }]);
    live.forEach((v, i) => expectClose(out![i]!, Array.from(v.data), { atol: 1e-6, rtol: 1e-6 }, `output ${i}`));
    expect(liveG[0]!.shape).to.deep.equal([2, 6, 4, 4]);
    expectClose(outG![0]!, Array.from(liveG[0]!.data), { atol: 1e-6, rtol: 1e-6 }, 'upsample');
  });
});
