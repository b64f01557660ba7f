// Variables on the tensorflow backend. The variable's cell (its NDArray) stays the source of
// truth, as on the theanine backend, so get_value/set_value and both backends agree. Each cell
// gets one tf.Variable, shared by every compiled function, remembering which NDArray object it
// holds: when the cell's value is another object (set_value, or another backend's update),
// the next read uploads it. Updates computed here are assigned to the tf.Variable directly and
// recorded with the NDArray that K.function then stores in the cell, so a training loop never
// re-uploads its weights. NDArrays are treated as immutable (K.get_value returns a copy).
import type { NDArray } from '../../ir/ndarray.js';
import type { VariableCell } from '../../ir/node.js';
import { upload } from './convert.js';
import type { TF } from './load.js';
import type { Tensor } from './types.js';

type TfVariable = ReturnType<TF['variable']>;

interface Entry {
  source: NDArray;
  variable: TfVariable;
}

const entries = new WeakMap<VariableCell, Entry>();
// A collected cell takes its tf.Variable with it.
const finalizer = new FinalizationRegistry<TfVariable>((v) => {
  if (!v.isDisposed) v.dispose();
});

function sameShape(a: readonly number[], b: readonly number[]): boolean {
  return a.length === b.length && a.every((d, i) => d === b[i]);
}

function create(tf: TF, cell: VariableCell, t: Tensor, source: NDArray): Entry {
  const e: Entry = { source, variable: tf.variable(t, false) };
  entries.set(cell, e);
  finalizer.register(cell, e.variable, e);
  return e;
}

/** Replaces what the tf.Variable holds (a new variable when the shape or dtype changed). */
function store(tf: TF, cell: VariableCell, e: Entry, t: Tensor, source: NDArray): void {
  if (t !== e.variable) {
    if (sameShape(t.shape, e.variable.shape) && t.dtype === e.variable.dtype) e.variable.assign(t);
    else {
      finalizer.unregister(e);
      e.variable.dispose();
      create(tf, cell, t, source);
      return;
    }
  }
  e.source = source;
}

/** The tf.Variable holding the cell's current value. */
export function readVariable(tf: TF, cell: VariableCell): TfVariable {
  const e = entries.get(cell);
  if (e !== undefined && e.source === cell.value && !e.variable.isDisposed) return e.variable;
  const t = upload(tf, cell.value);
  try {
    if (e === undefined || e.variable.isDisposed) return create(tf, cell, t, cell.value).variable;
    store(tf, cell, e, t, cell.value);
    return entries.get(cell)!.variable;
  } finally {
    t.dispose();
  }
}

/** After a call: the tf.Variable takes the update's value, which K.function is about to store as `nd`. */
export function adoptUpdate(tf: TF, cell: VariableCell, t: Tensor, nd: NDArray): void {
  const e = entries.get(cell);
  if (e === undefined || e.variable.isDisposed) create(tf, cell, t, nd);
  else store(tf, cell, e, t, nd);
}
