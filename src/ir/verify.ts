// The verifier: every node's stored type is what its op infers from its inputs, leaves are
// well formed, and ops are known. Run after every pass in tests.
import { isDType } from './dtype.js';
import { topoSort } from './graph.js';
import type { Node } from './node.js';
import { getOp, isOp } from './registry.js';
import { sameType, typeToString } from './types.js';
import type { ScanBody } from './scanbody.js';

export class VerifyError extends Error {
  override name = 'VerifyError';
}

export function verify(outputs: readonly Node[]): void {
  for (const n of topoSort(outputs)) {
    let def;
    try {
      def = getOp(n.op);
    } catch {
      throw new VerifyError(`node ${n.name}: unknown op ${JSON.stringify(n.op)}`);
    }
    if (def.arity !== 'variadic' && def.arity !== n.inputs.length) {
      throw new VerifyError(`node ${n.name}: op ${n.op} takes ${def.arity} inputs but has ${n.inputs.length}`);
    }
    if (!isDType(n.type.dtype)) throw new VerifyError(`node ${n.name}: bad dtype ${String(n.type.dtype)}`);
    if (n.type.shape.some((d) => d !== null && (!Number.isInteger(d) || d < 0))) {
      throw new VerifyError(`node ${n.name}: bad static shape ${JSON.stringify(n.type.shape)}`);
    }
    if (isOp(n, 'scan')) verifyBody(n, n.attrs.body);
    if (n.op === 'variable' && n.cell === undefined)
      throw new VerifyError(`node ${n.name}: variable without a value cell`);
    let t;
    try {
      t = def.infer(
        n.inputs.map((i) => i.type),
        n.attrs,
      );
    } catch (e) {
      throw new VerifyError(`node ${n.name} (${n.op}): its op rejects its inputs: ${(e as Error).message}`);
    }
    if (!sameType(t, n.type))
      throw new VerifyError(
        `node ${n.name} (${n.op}): stored type ${typeToString(n.type)} but its op infers ${typeToString(t)}`,
      );
  }
}

/** A Scan's inner graph is verified like any graph, and must read no leaf but its own args and constants. */
function verifyBody(n: Node, body: ScanBody): void {
  try {
    verify(body.results);
  } catch (e) {
    throw new VerifyError(`node ${n.name} (scan), in its body: ${(e as Error).message}`);
  }
  const own = new Set(body.args);
  for (const x of topoSort(body.results)) {
    if (x.inputs.length === 0 && x.op !== 'constant' && !own.has(x)) {
      throw new VerifyError(
        `node ${n.name} (scan): its body reads the ${x.op} leaf ${x.name}, which is not one of its args`,
      );
    }
  }
}
