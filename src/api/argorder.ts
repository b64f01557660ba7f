// The crossentropy argument order. The seed pages (Keras 2.0's backend docs)
// write categorical_crossentropy(output, target); Keras 2.0.7 and later write (target, output),
// so a literal port of Keras 2.2/2.3 losses.py runs with the arguments swapped and gives wrong
// numbers without any error. theanine keeps the seed's order and warns, once per call site, when
// the arguments look swapped: the first (output) is a placeholder, constant or variable, and the
// second (target) was computed by softmax or sigmoid.
import type { Node } from '../ir/node.js';
import { warn } from '../runtime/warn.js';
import { userSite } from '../ir/provenance.js';

/** Results of K.softmax (composed from primitives, so they are recognised by identity). */
const softmaxResults = new WeakSet<Node>();

export function markSoftmax(n: Node): Node {
  softmaxResults.add(n);
  return n;
}

function activationOf(n: Node): string | undefined {
  if (n.op === 'sigmoid') return 'sigmoid';
  if (softmaxResults.has(n)) return 'softmax';
  return undefined;
}

const LEAVES: Readonly<Record<string, string>> = {
  placeholder: 'a placeholder',
  constant: 'a constant',
  variable: 'a variable',
};

const warnedSites = new Set<string>();

/** The first stack frame outside theanine (the user's call site, as provenance finds it), or '' if none is found. */
function callSite(): string {
  const s = userSite(new Error().stack);
  return s === undefined ? '' : `${s.file}:${s.line}:${s.column}`;
}

/**
 * Warns (once per call site) when `output` is a leaf and `target` an activation's result: the
 * Keras 2.0.7+ order (target, output) given to a function that takes (output, target).
 */
export function checkArgumentOrder(
  fn: string,
  output: unknown,
  target: unknown,
  isNode: (x: unknown) => x is Node,
): void {
  if (!isNode(output) || !isNode(target)) return;
  const leaf = LEAVES[output.op];
  const act = activationOf(target);
  if (leaf === undefined || act === undefined) return;
  const site = callSite();
  const key = `${fn}@${site}`;
  if (warnedSites.has(key)) return;
  warnedSites.add(key);
  warn(
    `theanine: K.${fn}${site === '' ? '' : ` at ${site}`}: the arguments look swapped: the first (output) is ${leaf} ` +
      `(${JSON.stringify(output.name)}) and the second (target) is computed by ${act}. theanine takes (output, target), ` +
      `the order of the Keras 2.0 backend docs; Keras 2.0.7 and later (losses.py of 2.2 and 2.3) write (target, output). ` +
      `Swap them to K.${fn}(y_pred, y_true) (docs/keras-migration.md).`,
  );
}
