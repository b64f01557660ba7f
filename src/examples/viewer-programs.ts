// The viewer's examples as program text (viewer/model.ts in the repository says what a program returns): small
// versions of the graphs `theanine graph` draws (src/examples/graphs.ts) — the perceptron's
// crossentropy and its gradients, an LSTM through K.rnn, and the softmax-crossentropy pattern
// the stabilize pass rewrites — with concrete inputs small enough to read node by node; then the
// worked examples of docs/autodiff.md (reverse mode, and forward mode along a direction: jvp)
// and docs/passes.md, which link here.

/** docs/autodiff.md's worked example (a linear model's mean squared error), its inputs and loss: shared by 'autodiff-linear' and 'jvp'. */
const LINEAR_INPUTS = `  inputs: {
    x: [[1, 2, 3], [0.5, -1, 2], [-1, 0, 1], [2, 1, 0]],
    t: [[1], [0], [0.5], [1.5]],
    W: [[0.1], [0.2], [0.3]],
  },
  wrt: ['W'],
`;
const LINEAR_LOSS = `  loss: (x, t, W) => K.mean(K.square(K.subtract(K.dot(x, W), t))),
`;

export const VIEWER_EXAMPLES = {
  'mlp-gradient': `// A 2-layer perceptron: mean crossentropy of its logits against one-hot labels,
// differentiated with respect to its weights (as src/examples/graphs.ts' mlp-gradient).
return {
  inputs: {
    x: rand([4, 6], 1),
    y: [[1, 0, 0], [0, 1, 0], [0, 0, 1], [0, 1, 0]],
    W1: rand([6, 5], 2),
    b1: rand([5], 3),
    W2: rand([5, 3], 4),
    b2: rand([3], 5),
  },
  wrt: ['W1', 'b1', 'W2', 'b2'],
  loss: (x, y, W1, b1, W2, b2) => {
    const h = K.relu(K.add(K.dot(x, W1), b1));
    const logits = K.add(K.dot(h, W2), b2);
    return K.mean(K.categorical_crossentropy(logits, y, true));
  },
};
`,
  lstm: `// An LSTM reading 3 time steps through K.rnn (one Scan node), a dense layer on its last
// output, and a squared loss (as src/examples/models.ts' lstm, with one weight matrix per kind).
const units = 3;
return {
  inputs: {
    x: rand([2, 3, 2], 1),
    W: rand([2, 4 * units], 2),
    U: rand([units, 4 * units], 3),
    b: rand([4 * units], 4),
    V: rand([units, 2], 5),
  },
  wrt: ['W', 'U', 'b', 'V'],
  loss: (x, W, U, b, V) => {
    const gate = (z, k) => K.slice_along(z, -1, k * units, (k + 1) * units);
    const step = (xt, [h, c]) => {
      const z = K.add(K.add(K.dot(xt, W), K.dot(h, U)), b);
      const i = K.sigmoid(gate(z, 0)), f = K.sigmoid(gate(z, 1));
      const g = K.tanh(gate(z, 2)), o = K.sigmoid(gate(z, 3));
      const c2 = K.add(K.multiply(f, c), K.multiply(i, g));
      const h2 = K.multiply(o, K.tanh(c2));
      return [h2, [h2, c2]];
    };
    const zero = K.zeros([2, units]);
    const [last] = K.rnn(step, x, [zero, zero]);
    return K.mean(K.square(K.dot(last, V)));
  },
};
`,
  'softmax-crossentropy': `// K.categorical_crossentropy(K.softmax(z), y): the pattern the stabilize pass rewrites
// into a log-softmax (as src/examples/graphs.ts' softmax-crossentropy).
return {
  inputs: {
    logits: rand([3, 4], 7),
    y: [[0, 1, 0, 0], [1, 0, 0, 0], [0, 0, 0, 1]],
  },
  wrt: ['logits'],
  loss: (logits, y) => K.mean(K.categorical_crossentropy(K.softmax(logits), y)),
};
`,
  'autodiff-linear': `// docs/autodiff.md's worked example: a linear model's mean squared error and d loss / d W.
return {
${LINEAR_INPUTS}${LINEAR_LOSS}};
`,
  jvp: `// Forward mode (autodiff.jvp) on docs/autodiff.md's worked example: every node carries its
// value and its tangent, how fast it changes when W moves along the direction V (dual numbers),
// computed in one pass from the inputs. The loss' tangent is <d loss / d W, V>.
return {
${LINEAR_INPUTS}  tangents: { W: [[1], [0], [-1]] },
${LINEAR_LOSS}};
`,
  'pass-merge': `// docs/passes.md, merge: x*y and y*x become one node once their operands are in one order.
// (A loss that is not a scalar is summed before differentiating, as Keras does.)
return {
  inputs: { x: rand([2, 4], 1), y: rand([2, 4], 2) },
  loss: (x, y) => K.add(K.multiply(x, y), K.multiply(y, x)),
};
`,
  'pass-canonicalize': `// docs/passes.md, canonicalize: x*1, +0 and neg(neg(.)) disappear.
return {
  inputs: { x: rand([2, 4], 1) },
  loss: (x) => K.sum(K.negative(K.negative(K.add(K.multiply(x, 1), 0)))),
};
`,
  'pass-specialize': `// docs/passes.md, specialize: pow(x, 2) becomes x*x and pow(y, 0.5) sqrt(y).
return {
  inputs: { x: rand([2, 4], 1), y: [[0.5, 1, 1.5, 2], [0.25, 0.75, 1.25, 3]] },
  loss: (x, y) => K.add(K.pow(x, 2), K.pow(y, 0.5)),
};
`,
  'pass-fusion': `// docs/passes.md, fusion: the max-shifted exponentials and their sum as fused kernels.
return {
  inputs: { x: rand([2, 4], 1) },
  loss: (x) => K.sum(K.exp(K.subtract(x, K.max(x, 1, true))), 1),
};
`,
} as const;

export type ViewerExample = keyof typeof VIEWER_EXAMPLES;
export const VIEWER_EXAMPLE_NAMES = Object.keys(VIEWER_EXAMPLES) as ViewerExample[];
