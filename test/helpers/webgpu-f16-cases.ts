// float16 graphs run on one device (the webgpu f16 suite runs them with f16 storage, with f32
// storage in a child process under THEANINE_WEBGPU_F16=0, and on the cpu): each case's values.
import { backend as K, NDArray } from '../../src/index.js';

const half = (shape: number[], seed: number): NDArray =>
  NDArray.from(
    Array.from({ length: shape.reduce((a, d) => a * d, 1) }, (_, i) => Math.sin(seed * 7.3 + i * 1.1) * 1.5),
    'float16',
  ).reshape(shape);

const ph = (shape: (number | null)[]) => K.placeholder(shape, null, 'float16');

/** Each case's outputs' values on `device` (odd element counts throughout: f16 buffers are padded to 4 bytes). */
export function f16Cases(device: 'cpu' | 'gpu'): Record<string, number[][]> {
  const opts = { device, fallback: 'error' } as const;
  const out: Record<string, number[][]> = {};
  const run = (name: string, f: (vs: NDArray[]) => NDArray[], vs: NDArray[]): void => {
    out[name] = f(vs).map((r) => {
      if (r.dtype !== 'float16') throw new Error(`${name}: a ${r.dtype} output`);
      return Array.from(r.data, Number);
    });
  };
  {
    const x = ph([33]);
    const y = K.subtract(K.exp(K.tanh(K.add(K.multiply(x, 1.5), 0.25))), x);
    run('chain', K.function([x], [y, K.square(y)], [], opts), [half([33], 1)]);
  }
  {
    const x = ph([7, 33]);
    run('reduce', K.function([x], [K.sum(x, 1), K.max(x, 0), K.mean(K.exp(x))], [], opts), [half([7, 33], 2)]);
  }
  {
    const a = ph([9, 17]);
    const b = ph([17, 5]);
    run('matmul', K.function([a, b], [K.dot(a, b)], [], opts), [half([9, 17], 3), half([17, 5], 4)]);
  }
  {
    // 24 inputs: more than a shader binds on lavapipe (16), so read-only ones are packed (f16 parts on even elements)
    const xs = Array.from({ length: 24 }, (_, k) => ph(k % 3 === 0 ? [5, 7] : k % 3 === 1 ? [1, 7] : [5, 1]));
    const y = xs.slice(1).reduce((a, x, k) => (k % 2 === 0 ? K.add(a, K.multiply(x, 0.5)) : K.subtract(a, K.sin(x))), xs[0]!);
    run('packed', K.function(xs, [y], [], opts), xs.map((x, k) => half(x.shape as number[], 10 + k)));
  }
  {
    // a training step with float16 variables, three times: the variables stay on the device between calls
    const x = ph([8, 5]);
    const t = ph([8, 3]);
    const w = K.variable(half([5, 3], 5), 'float16');
    const b = K.variable(half([3], 6), 'float16');
    const loss = K.mean(K.square(K.subtract(K.add(K.dot(x, w), b), t)));
    const [gw, gb] = K.gradients(loss, [w, b]);
    const step = K.function([x, t], [loss], [K.update(w, K.subtract(w, K.multiply(gw!, 0.1))), K.update(b, K.subtract(b, K.multiply(gb!, 0.1)))], opts);
    const losses: number[] = [];
    for (let k = 0; k < 3; k++) losses.push(Number(step([half([8, 5], 7), half([8, 3], 8)])[0]!.data[0]));
    out['train'] = [losses, Array.from(K.get_value(w).data, Number), Array.from(K.get_value(b).data, Number)];
  }
  {
    // a Scan whose per-step values are an even count of float16 (its buffer copies are whole words)
    const xs = ph([2, 40, 3]);
    const w = K.variable(half([3, 2], 9), 'float16');
    const u = K.variable(NDArray.from([0.3, -0.2, 0.1, 0.4], 'float16').reshape([2, 2]), 'float16');
    const [last, outs] = K.rnn((xt, [h]) => {
      const hn = K.tanh(K.add(K.dot(xt, w), K.dot(h!, u)));
      return [hn, [hn]];
    }, xs, [K.zeros([2, 2], 'float16')]);
    run('scan', K.function([xs], [last!, outs!], [], opts), [half([2, 40, 3], 11)]);
  }
  {
    // a Scan copying odd counts of float16 at odd elements (buffer copies move 4-byte words; the
    // worker's f16 copy kernel does these): 3 values a step from each sequence, at 3 t; a state of
    // 3; 9 weights; outputs stacked at 3 k; forwards and backwards
    const xs = ph([1, 41, 3]);
    const w = K.variable(half([3, 3], 12), 'float16');
    const step: Parameters<typeof K.rnn>[0] = (xt, [h]) => {
      const hn = K.tanh(K.add(K.dot(xt, K.multiply(w, 0.5)), K.multiply(h!, 0.75)));
      return [hn, [hn]];
    };
    const [last, outs, [state]] = K.rnn(step, xs, [K.zeros([1, 3], 'float16')]);
    const [lastB, outsB] = K.rnn(step, xs, [K.ones([1, 3], 'float16')], true);
    run('scan-odd', K.function([xs], [last!, outs!, state!, lastB!, outsB!], [], opts), [half([1, 41, 3], 13)]);
  }
  return out;
}
