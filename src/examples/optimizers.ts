// Adam written with the backend API, as Keras 2.3's optimizers.Adam writes it (bias-corrected
// through the step size):
//   t     = iterations + 1
//   lr_t  = lr / (1 + decay * iterations) * sqrt(1 - beta_2^t) / (1 - beta_1^t)
//   m_t   = beta_1 * m + (1 - beta_1) * g
//   v_t   = beta_2 * v + (1 - beta_2) * g^2
//   p_t   = p - lr_t * m_t / (sqrt(v_t) + epsilon)
// Every assignment is a K.update; K.function applies them together after computing the loss.
import { NDArray, backend as K, type Tensor } from '../index.js';
import { sizeOf } from '../ir/ndarray.js';

export interface AdamOptions {
  readonly lr?: number;
  readonly beta_1?: number;
  readonly beta_2?: number;
  /** Keras 2.3's default is K.epsilon() (1e-7). */
  readonly epsilon?: number;
  /** Inverse-time decay of the learning rate per step (Keras' `decay`). */
  readonly decay?: number;
}

export type UpdateRecord = ReturnType<typeof K.update>;

export interface Adam {
  readonly updates: UpdateRecord[];
  /** The step counter (int32), for inspection. */
  readonly iterations: Tensor;
}

function zerosLike(p: Tensor, name: string): Tensor {
  const shape = p.shape.map((d) => d ?? 0);
  return K.variable(new NDArray(new Float32Array(sizeOf(shape)), shape, p.dtype), p.dtype, name);
}

export function adam(params: readonly Tensor[], grads: readonly Tensor[], opts: AdamOptions = {}): Adam {
  const lr = opts.lr ?? 0.001;
  const b1 = opts.beta_1 ?? 0.9;
  const b2 = opts.beta_2 ?? 0.999;
  const eps = opts.epsilon ?? K.epsilon();
  const decay = opts.decay ?? 0;
  const iterations = K.variable(0, 'int32', 'iterations');
  const it = K.cast(iterations, K.floatx());
  const t = K.add(it, 1);
  let step: Tensor | number = lr;
  if (decay > 0) step = K.divide(lr, K.add(K.multiply(it, decay), 1));
  const lrT = K.multiply(step, K.divide(K.sqrt(K.subtract(1, K.pow(b2, t))), K.subtract(1, K.pow(b1, t))));
  const updates: UpdateRecord[] = [K.update_add(iterations, 1)];
  params.forEach((p, k) => {
    const g = grads[k]!;
    const m = zerosLike(p, `${p.name}/m`);
    const v = zerosLike(p, `${p.name}/v`);
    const mT = K.add(K.multiply(m, b1), K.multiply(g, 1 - b1));
    const vT = K.add(K.multiply(v, b2), K.multiply(K.square(g), 1 - b2));
    const pT = K.subtract(p, K.divide(K.multiply(lrT, mT), K.add(K.sqrt(vT), eps)));
    updates.push(K.update(m, mT), K.update(v, vT), K.update(p, pT));
  });
  return { updates, iterations };
}
