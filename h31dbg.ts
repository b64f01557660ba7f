import { backend as K, NDArray } from './src/index.js';
const x = K.placeholder([null, 3], null, 'float32', false, 'x');
const f = K.function([x], [K.exp(x), K.sum(x, 1)], [], { device: 'gpu' });
console.log(f.device);
const r = f([NDArray.zeros([0, 3], 'float32')]);
console.log(r.map((a) => a.shape));
