// Small built-in graphs for `theanine graph` and `theanine passes`, and the pictures in docs/.
// Each says which nodes belong together (forward pass, gradients) so pictures can group them.
import { autodiff, backend as K, type DotCluster, type Tensor } from '../index.js';
import { CLASSES, PIXELS } from './mnist.js';
import { lstm, mlp } from './models.js';
import { Rng } from './random.js';

export const EXAMPLES = [
  'mlp-forward',
  'mlp-gradient',
  'lstm',
  'softmax-crossentropy',
  'jvp',
  'hessian-vector-product',
  'vmap',
] as const;
export type ExampleName = (typeof EXAMPLES)[number];

export interface Example {
  readonly name: ExampleName;
  readonly description: string;
  readonly inputs: readonly Tensor[];
  readonly outputs: readonly Tensor[];
  readonly outputNames: readonly string[];
  /**
   * The groups of a version of `outputs` (as built, or after the optimizer): which box a node is
   * drawn in (gradient nodes, for instance).
   */
  readonly groups?: (outputs: readonly Tensor[]) => (n: Tensor) => DotCluster | undefined;
}

const GRADIENT: DotCluster = { id: 'gradients', label: 'K.gradients: reverse mode', kind: 'gradient' };
const TANGENT: DotCluster = { id: 'tangents', label: 'autodiff.jvp: forward mode', kind: 'gradient' };

/** Every node `outputs` depend on (the package's public Tensor.inputs, walked without recursion). */
export function reachable(outputs: readonly Tensor[]): Set<Tensor> {
  const seen = new Set<Tensor>();
  const stack = [...outputs];
  while (stack.length > 0) {
    const n = stack.pop()!;
    if (seen.has(n)) continue;
    seen.add(n);
    stack.push(...n.inputs);
  }
  return seen;
}

/** Nodes reached from `grads` but not needed for the forward value `loss` are the gradient's own. */
export function gradientCluster(
  loss: Tensor,
  grads: readonly Tensor[],
  box = GRADIENT,
): (n: Tensor) => DotCluster | undefined {
  const forward = reachable([loss]);
  const backward = new Set([...reachable(grads)].filter((n) => !forward.has(n)));
  return (n) => (backward.has(n) ? box : undefined);
}

function mlpParts(hidden: number) {
  const model = mlp(new Rng(1), hidden);
  const x = K.placeholder([null, PIXELS], null, 'float32', false, 'x');
  const y = K.placeholder([null, CLASSES], null, 'float32', false, 'y');
  return { model, x, y };
}

export function buildExample(name: ExampleName): Example {
  switch (name) {
    case 'mlp-forward': {
      const { model, x } = mlpParts(32);
      return {
        name,
        description: `class probabilities of a 2-layer perceptron (${model.summary})`,
        inputs: [x],
        outputs: [K.softmax(model.logits(x))],
        outputNames: ['probabilities'],
      };
    }
    case 'mlp-gradient': {
      const { model, x, y } = mlpParts(32);
      const loss = K.mean(K.categorical_crossentropy(model.logits(x), y, true));
      const grads = K.gradients(loss, model.params);
      return {
        name,
        description: 'the mean crossentropy of the perceptron and its gradients with respect to W1, b1, W2, b2',
        inputs: [x, y],
        outputs: [loss, ...grads],
        outputNames: ['loss', ...model.params.map((p) => `d loss / d ${p.name}`)],
        groups: ([l, ...gs]) => gradientCluster(l!, gs),
      };
    }
    case 'lstm': {
      const model = lstm(new Rng(1), 16);
      const x = K.placeholder([null, 28, 28], null, 'float32', false, 'x');
      return {
        name,
        description: `an LSTM reading a digit row by row through K.rnn (${model.summary})`,
        inputs: [x],
        outputs: [model.logits(x)],
        outputNames: ['logits'],
      };
    }
    case 'jvp': {
      const { model, x, y } = mlpParts(32);
      const loss = K.mean(K.categorical_crossentropy(model.logits(x), y, true));
      const W1 = model.params[0]!;
      const v = K.placeholder(W1.shape, null, 'float32', false, 'v');
      return {
        name,
        description: 'the perceptron loss and its derivative along a direction v of W1, by forward mode (autodiff.jvp)',
        inputs: [x, y, v],
        outputs: [loss, autodiff.jvp(loss, W1, v)],
        outputNames: ['loss', `d loss / d ${W1.name} . v`],
        groups: ([l, t]) => gradientCluster(l!, [t!], TANGENT),
      };
    }
    case 'hessian-vector-product': {
      const { model, x, y } = mlpParts(32);
      const loss = K.mean(K.categorical_crossentropy(model.logits(x), y, true));
      const vs = model.params.map((p) => K.placeholder(p.shape, null, 'float32', false, `v_${p.name}`));
      const hv = autodiff.hessian_vector_product(loss, model.params, vs);
      return {
        name,
        description: 'the Hessian of the perceptron loss times v, by forward mode over the reverse-mode gradient',
        inputs: [x, y, ...vs],
        outputs: [loss, ...hv],
        outputNames: ['loss', ...model.params.map((p) => `(H v) for ${p.name}`)],
        groups: ([l, ...gs]) => gradientCluster(l!, gs),
      };
    }
    case 'vmap': {
      const { model, x, y } = mlpParts(32);
      const W1 = model.params[0]!;
      // One example's gradient, batched by vmap: per-example gradients (JAX's vmap(grad)).
      const perExample = autodiff.vmap((xi: Tensor, yi: Tensor) => {
        const loss = K.mean(K.categorical_crossentropy(model.logits(K.expand_dims(xi, 0)), K.expand_dims(yi, 0), true));
        return autodiff.grad(loss, W1)!;
      });
      return {
        name,
        description: `per-example gradients of the loss by ${W1.name} (vmap of grad)`,
        inputs: [x, y],
        outputs: [perExample(x, y)],
        outputNames: [`d loss_i / d ${W1.name}, per example`],
      };
    }
    case 'softmax-crossentropy': {
      const z = K.placeholder([null, CLASSES], null, 'float32', false, 'logits');
      const y = K.placeholder([null, CLASSES], null, 'float32', false, 'y');
      return {
        name,
        description: 'K.categorical_crossentropy(K.softmax(logits), y), the pattern the stabilize pass rewrites',
        inputs: [z, y],
        outputs: [K.mean(K.categorical_crossentropy(K.softmax(z), y))],
        outputNames: ['loss'],
      };
    }
  }
}
