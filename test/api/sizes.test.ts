// Symbolic sizes: K.shape(x), K.shape(x)[i] (K.gather(K.shape(x), i) or
// K.shape(x).get(i)), their arithmetic, and lists mixing numbers and scalar int tensors, accepted
// wherever Keras takes a shape or a size. Each case is built over placeholders with unknown dims and
// compared, on every target, with the same computation written with the sizes as numbers (static
// ops) run by the reference interpreter; gradients of the sized ops against central differences.
import { expect } from 'chai';
import { backend as K, FallbackError, NDArray, ValueError, type Tensor } from '../../src/index.js';
import { expectClose } from '../helpers/assert.js';
import { grid } from '../helpers/values.js';
import { targets } from '../helpers/targets.js';
import { computesInFloat32 } from '../../src/api/gradients.js';

type Dims = (number | null)[];
interface SizeCase {
  readonly name: string;
  /** Placeholder shapes (null: unknown) and the values fed. */
  readonly inputs: readonly { shape: Dims; value: NDArray }[];
  /** The graph with sizes from tensors. */
  readonly sized: (xs: Tensor[]) => Tensor;
  /** The same with the sizes written as numbers (read from the values' shapes). */
  readonly fixed: (xs: Tensor[], shapes: readonly (readonly number[])[]) => Tensor;
  /** What static inference knows of the sized result. */
  readonly intShape?: Dims;
  /** A random draw: compiled targets run it as an extern step (NO_KERNEL_YET); tfjs draws other numbers. */
  readonly random?: boolean;
}

const f32 = (shape: number[], seed: number) => grid(shape, seed, 'float32');

const cases: SizeCase[] = [
  {
    // Keras' TimeDistributed(Dense) over an unknown number of timesteps
    name: 'reshape [-1, K.shape(x)[1], units] (TimeDistributed)',
    inputs: [{ shape: [null, null, 4], value: f32([2, 5, 4], 1) }],
    sized: ([x]) => K.reshape(K.dot(K.reshape(x!, [-1, 4]), K.constant(grid([4, 3], 2, 'float32'))), [-1, K.shape(x!).get(1), 3]),
    fixed: ([x], [s]) => K.reshape(K.dot(K.reshape(x!, [-1, 4]), K.constant(grid([4, 3], 2, 'float32'))), [-1, s![1]!, 3]),
    intShape: [null, null, 3],
  },
  {
    name: 'reshape to K.shape(y) (a 1-D int tensor) and with K.gather(K.shape(x), i) arithmetic',
    inputs: [{ shape: [null, 6], value: f32([2, 6], 3) }, { shape: [null, 3, null], value: f32([2, 3, 2], 4) }],
    sized: ([x, y]) => K.reshape(x!, K.shape(y!)).add(K.reshape(x!, [K.gather(K.shape(x!), 0), 3, K.gather(K.shape(x!), 1).sub(4)]).mul(0)),
    fixed: ([x], [, sy]) => K.reshape(x!, [...sy!]),
    intShape: [null, 3, 2], // x has 6 columns: K.shape(x)[1] - 4 is 2 statically
  },
  {
    name: 'tile by [1, K.shape(y)[0]] and repeat by K.shape(y)[1]',
    inputs: [{ shape: [null, 2], value: f32([3, 2], 5) }, { shape: [null, null], value: f32([2, 4], 6) }],
    sized: ([x, y]) => K.concatenate([K.tile(x!, [1, K.shape(y!).get(0)]), K.batch_flatten(K.repeat(x!, K.shape(y!).get(1)))], 1),
    fixed: ([x], [, sy]) => K.concatenate([K.tile(x!, [1, sy![0]!]), K.batch_flatten(K.repeat(x!, sy![1]!))], 1),
    intShape: [null, null],
  },
  {
    name: 'zeros, ones and eye of sizes from K.shape',
    inputs: [{ shape: [null, null], value: f32([3, 3], 7) }],
    sized: ([x]) => x!.add(K.ones([K.shape(x!).get(0), K.shape(x!).get(1)]).mul(2)).add(K.zeros(K.shape(x!))).add(K.eye(K.shape(x!).get(1))),
    fixed: ([x], [s]) => x!.add(K.ones([s![0]!, s![1]!]).mul(2)).add(K.eye(s![1]!)),
    intShape: [null, null],
  },
  {
    name: 'slice with start and size from K.shape arithmetic, arange to K.shape(x)[1]',
    inputs: [{ shape: [null, null], value: f32([3, 5], 8) }],
    sized: ([x]) => K.slice(x!, [0, K.shape(x!).get(1).sub(3)], [-1, 2]).add(K.cast(K.arange(K.shape(x!).get(1).sub(3), K.shape(x!).get(1).sub(1)), 'float32')),
    fixed: ([x], [s]) => K.slice(x!, [0, s![1]! - 3], [-1, 2]).add(K.cast(K.arange(s![1]! - 3, s![1]! - 1), 'float32')),
    intShape: [null, 2],
  },
  {
    name: 'resize_images by a factor from K.shape',
    inputs: [{ shape: [null, 2, 3, 1], value: f32([2, 2, 3, 1], 9) }, { shape: [null], value: f32([2], 10) }],
    sized: ([x, f]) => K.resize_images(x!, K.shape(f!).get(0), 3, 'channels_last'),
    fixed: ([x], [, sf]) => K.resize_images(x!, sf![0]!, 3, 'channels_last'),
    intShape: [null, null, 9, 1],
  },
  {
    // Keras' Conv2DTranspose: output_shape computed from K.shape(inputs)
    name: 'conv2d_transpose with output_shape from K.shape',
    inputs: [{ shape: [null, null, null, 2], value: f32([2, 3, 4, 2], 11) }],
    sized: ([x]) => {
      const s = K.shape(x!);
      return K.conv2d_transpose(x!, K.constant(grid([3, 3, 5, 2], 12, 'float32')), [s.get(0), s.get(1).mul(2), s.get(2).mul(2), 5], [2, 2], 'same');
    },
    fixed: ([x], [s]) => K.conv2d_transpose(x!, K.constant(grid([3, 3, 5, 2], 12, 'float32')), [s![0]!, s![1]! * 2, s![2]! * 2, 5], [2, 2], 'same'),
    intShape: [null, null, null, 5],
  },
  {
    name: 'random_normal of shape [K.shape(x)[0], 3] and dropout with noise_shape [K.shape(x)[0], 1]',
    inputs: [{ shape: [null, 3], value: f32([4, 3], 13) }],
    sized: ([x]) => x!.add(K.random_normal([K.shape(x!).get(0), 3], 0, 1, null, 5)).add(K.dropout(x!, 0.5, [K.shape(x!).get(0), 1], 6)),
    fixed: ([x], [s]) => x!.add(K.random_normal([s![0]!, 3], 0, 1, null, 5)).add(K.dropout(x!, 0.5, [s![0]!, 1], 6)),
    intShape: [null, 3],
    random: true,
  },
];

describe('K: sizes from tensors', () => {
  for (const c of cases) {
    it(`${c.name}: static inference`, () => {
      const xs = c.inputs.map((i) => K.placeholder(i.shape, null, i.value.dtype));
      expect(K.int_shape(c.sized(xs))).to.deep.equal(c.intShape);
    });
    for (const t of targets) {
      if (c.random === true && t.name === 'tensorflow') continue; // tfjs draws from its own generator: compared on its own below
      it(`${c.name} [${t.name}]`, () => {
        const xs = c.inputs.map((i) => K.placeholder(i.shape, null, i.value.dtype));
        const values = c.inputs.map((i) => i.value);
        const got = K.function(xs, [c.sized(xs)], [], t.options)(values)[0]!;
        const fx = c.inputs.map((i) => K.placeholder(i.value.shape, null, i.value.dtype));
        const want = K.function(fx, [c.fixed(fx, values.map((v) => v.shape))], [], { optimizer: 'none' })(values)[0]!;
        expectClose(got, want, { atol: Math.max(t.tol.atol, 1e-5), rtol: Math.max(t.tol.rtol, 1e-5) });
      });
    }
  }

  // Gradients of the sized ops (reshape_dims, tile_dims, slice_dims and their adjoints) against central differences, in float64.
  const gradCases: { name: string; shape: Dims; value: NDArray; f: (x: Tensor) => Tensor }[] = [
    { name: 'reshape_dims', shape: [null, null], value: grid([2, 6], 21), f: (x) => K.reshape(x, [K.shape(x).get(1), -1]) },
    { name: 'tile_dims', shape: [null, 3], value: grid([2, 3], 22), f: (x) => K.tile(x, [K.shape(x).get(0), 1]) },
    { name: 'slice_dims', shape: [null, null], value: grid([3, 4], 23), f: (x) => K.slice(x, [1, K.shape(x).get(1).sub(3)], [-1, 2]) },
  ];
  for (const g of gradCases) {
    // central differences of step 1e-6 need float64 arithmetic, which tensorflow and the gpu do in float32
    for (const t of targets.filter((t) => t.gradDTypes.includes('float64') && !computesInFloat32(t.options))) {
      it(`gradient of ${g.name} against central differences [${t.name}]`, () => {
        const x = K.placeholder(g.shape, null, 'float64');
        const w = grid(g.f(K.placeholder(g.value.shape, null, 'float64')).shape as number[], 31);
        const loss = K.sum(K.square(g.f(x)).mul(K.constant(w)));
        const [gx] = K.gradients(loss, [x]);
        const f = K.function([x], [loss, gx!], [], t.options);
        const analytic = f([g.value])[1]!;
        const eps = 1e-6;
        const numeric = Array.from(g.value.data, (_, i) => {
          const at = (d: number) => {
            const v = g.value.clone();
            v.data[i] = v.data[i]! + d;
            return Number(f([v])[0]!.data[0]);
          };
          return (at(eps) - at(-eps)) / (2 * eps);
        });
        expectClose(analytic, new NDArray(numeric, g.value.shape, 'float64'), { atol: 1e-6, rtol: 1e-5 });
      });
    }
  }

  it('bad sizes are errors naming the function and the argument', () => {
    const x = K.placeholder([null, 4], null, 'float32');
    expect(() => K.reshape(x, [-1, K.cast(K.shape(x).get(1), 'float32')])).to.throw(ValueError, /K\.reshape: shape\[1\] must be an integer scalar tensor, not float32 \(\)/);
    expect(() => K.reshape(x, [-1, -1])).to.throw(ValueError, /K\.reshape: shape \(-1, -1\) has more than one -1/);
    expect(() => K.tile(x, K.cast(K.shape(x), 'float32'))).to.throw(ValueError, /K\.tile: n must be a 1-D integer tensor of known length/);
    expect(() => K.slice(x, [0, K.shape(x).get(0)], [1])).to.throw(ValueError, /K\.slice: start \(2 entries\) and size \(1 entries\) must each have one entry per axis/);
    expect(() => K.eye(K.shape(x))).to.throw(ValueError, /eye: size must be an integer or an integer scalar tensor, got int32 \(2,\)/);
    expect(() => K.reshape(x, 6 as never)).to.throw(ValueError, /K\.reshape: shape must be an array of integers \(or integer scalar tensors\), or a 1-D integer tensor, got number 6/);
  });

  it('sizes known only from input values run the interpreter, and the error says they depend on values', () => {
    const x = K.placeholder([null], null, 'float32');
    const n = K.placeholder([], null, 'int32', false, 'n');
    const y = K.reshape(x, [n, -1]);
    const v = new NDArray([1, 2, 3, 4, 5, 6], [6], 'float32');
    const out = K.function([x, n], [y])([v, new NDArray([2], [], 'int32')])[0]!;
    expect(out.shape).to.deep.equal([2, 3]);
    expect(() => K.function([x, n], [y], [], { fallback: 'error' })([v, new NDArray([3], [], 'int32')]))
      .to.throw(FallbackError, /reshape_dims: shape \(None, None\) is not known from the input shapes \(it depends on the values of placeholder n, not only on shapes\)/);
  });

  it('a size that does not fit is the interpreter\'s error at the call', () => {
    const x = K.placeholder([null, 4], null, 'float32');
    const y = K.reshape(x, [K.shape(x).get(0), 3]);
    expect(() => K.function([x], [y], [], { fallback: 'error' })([grid([2, 4], 1, 'float32')])).to.throw(/cannot reshape \(2, 4\) \(8 elements\) to \(2, 3\)/);
  });
});
