// Issue 14 item 3: TensorFlow.js has no float64 (nor int64); the tensorflow backend says so once
// per process and dtype instead of returning float32 results labelled float64 silently.
import { expect } from 'chai';
import { backend as K, NDArray } from '../../../src/index.js';
import { setWarningSink } from '../../../src/runtime/warn.js';
import { _resetNarrowedWarnings } from '../../../src/runtime/tfjs/executor.js';

describe('runtime/tfjs: float64 and int64 narrowing is said, once', () => {
  it('the first float64 function warns, naming the dtype and the backend; later ones do not', () => {
    _resetNarrowedWarnings();
    const said: string[] = [];
    const before = setWarningSink((m) => { said.push(m); });
    try {
      const v = K.variable(new NDArray(Float64Array.of(1.0000000001, 2), [2], 'float64'), 'float64');
      const f = K.function([], [K.add(v, 1e-10)], [], { backend: 'tensorflow' });
      const out = f([])[0]!;
      // what is warned about: the digits are gone, the label stays
      expect(out.dtype).to.equal('float64');
      expect(Array.from(out.data)).to.deep.equal([1, 2]);
      expect(said).to.have.length(1);
      expect(said[0]).to.match(/^theanine: backend "tensorflow": TensorFlow.js has no float64, so float64 values are computed in float32/);
      K.function([], [K.multiply(v, 2)], [], { backend: 'tensorflow' })([]);
      expect(said, 'once per process').to.have.length(1);
      // the theanine backend computes float64 exactly and says nothing
      expect(Array.from(K.function([], [K.add(v, 1e-10)])([])[0]!.data)[0]).to.equal(1.0000000001 + 1e-10);
      const x = K.placeholder([2], null, 'int64');
      K.function([x], [K.add(x, 1)], [], { backend: 'tensorflow' });
      expect(said).to.have.length(2);
      expect(said[1]).to.match(/TensorFlow.js has no int64, so int64 values are computed in int32/);
      const y = K.placeholder([2]);
      K.function([y], [K.exp(y)], [], { backend: 'tensorflow' });
      expect(said, 'float32 functions say nothing').to.have.length(2);
    } finally {
      setWarningSink(before);
    }
  });
});
