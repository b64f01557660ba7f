// verify_grad of the ops only the optimizer introduces (src/ir/ops/introduced.ts).
import { apply } from '../../src/ir/build.js';
import { gradTable } from '../helpers/gradtable.js';

const LOGITS = [[0.3, -1.2, 0.7, 2.0], [1.5, 0.4, -0.6, 0.1], [-2.0, 0.5, 0.5, 1.0]];
const SOFT_TARGETS = [[0.1, 0.2, 0.3, 0.4], [1, 0, 0, 0], [0.25, 0.25, 0.5, 0]];

gradTable('gradients: optimizer ops', [
  { name: 'softmax_cross_entropy axis -1', inputs: [LOGITS, SOFT_TARGETS], build: (x, t) => apply('softmax_cross_entropy', [x, t], { axis: 1 }) },
  { name: 'softmax_cross_entropy axis 0', inputs: [LOGITS, SOFT_TARGETS], build: (x, t) => apply('softmax_cross_entropy', [x, t], { axis: 0 }) },
]);
