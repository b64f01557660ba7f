// User ops' `wgsl` templates (defineOp, src/codegen/lower/user.ts): a WGSL expression of one
// output element over `x0`, `x1`, ... (f32: the device computes every value in f32, integers and
// bools as whole numbers) with the op's number and boolean attrs in scope by name (f32
// constants). The renderer makes it a helper function of the kernel that calls it, so the op
// fuses with its neighbours as on the cpu (tfjs' custom WebGL/WebGPU kernels and tinygrad's
// per-backend code_for_op are the anchors: a spelling per backend, checked when given).
import { ValueError } from '../../ir/errors.js';
import { attrsKey } from '../../ir/node.js';
import type { Attrs } from '../../ir/op.js';
import type { ScalarFn } from '../kernel/expr.js';
import { scalarAttrs, userCallOf, userTemplates } from '../lower/user.js';
import { f32Literal } from './scalar.js';

type Render = (a: readonly string[]) => string;

/** Names that begin a statement or declaration: a template is one expression. */
const STATEMENTS = new Set(
  'let var const return if else for while loop fn switch case default break continue continuing discard struct alias override enable requires diagnostic'.split(
    ' ',
  ),
);
const TOKEN =
  /\s+|\/\*[\s\S]*?\*\/|0[xX][0-9a-fA-F]+[iu]?|(?:\d+\.\d*|\.\d+|\d+)(?:[eE][+-]?\d+)?[fhiu]?|[A-Za-z_][A-Za-z0-9_]*|&&|\|\||==|!=|<=|>=|<<|>>|[-+*/%<>!~&|^()[\],.]/y;
const BINARY = new Set([
  '||',
  '&&',
  '|',
  '^',
  '&',
  '==',
  '!=',
  '<',
  '>',
  '<=',
  '>=',
  '<<',
  '>>',
  '+',
  '-',
  '*',
  '/',
  '%',
]);

/**
 * Checks a wgsl template's syntax now (a WGSL expression: operands, calls, conversions such as
 * `f32(x)` and `bitcast<u32>(x)`, indexing and members, the unary and binary operators), so a
 * typo is reported by defineOp and not by the shader compiler. Types and names are the
 * compiler's to check.
 */
export function checkWgslTemplate(op: string, src: unknown, arity: number | undefined): string {
  if (typeof src !== 'string' || src.trim() === '')
    throw new TypeError(`defineOp(${op}): wgsl must be a WGSL expression string, such as 'x0 * x1'`);
  const bad = (why: string): ValueError =>
    new ValueError(`defineOp(${op}): the wgsl template ${JSON.stringify(src)} is not a WGSL expression: ${why}`);
  // The helper is one line (the runtime names the op of a compile error on it), so no line comments.
  if (src.includes('//')) throw bad('line comments (//) are not allowed; use /* ... */');
  const toks: string[] = [];
  TOKEN.lastIndex = 0;
  while (TOKEN.lastIndex < src.length) {
    const at = TOKEN.lastIndex;
    const m = TOKEN.exec(src);
    if (m === null)
      throw bad(
        `unexpected ${JSON.stringify(src[at])} at ${at}${'{};='.includes(src[at]!) ? ' (one expression, no statements)' : ''}`,
      );
    if (!/^\s|^\/\*/.test(m[0])) toks.push(m[0]);
  }
  let k = 0;
  const peek = (): string | undefined => toks[k];
  const take = (want: string): void => {
    if (toks[k] !== want)
      throw bad(
        `expected ${JSON.stringify(want)}, found ${toks[k] === undefined ? 'the end' : JSON.stringify(toks[k])}`,
      );
    k++;
  };
  const ident = (t: string | undefined): boolean => t !== undefined && /^[A-Za-z_]/.test(t);
  const args = (): void => {
    take('(');
    if (peek() !== ')') {
      expr();
      while (peek() === ',') {
        k++;
        if (peek() !== ')') expr();
      }
    }
    take(')');
  };
  const primary = (): void => {
    const t = peek();
    if (t === undefined) throw bad('it ends where an operand was expected');
    k++;
    if (t === '(') {
      expr();
      take(')');
    } else if (ident(t)) {
      if (STATEMENTS.has(t)) throw bad(`${t} begins a statement (one expression, no statements)`);
      if (/^[tu]_/.test(t) && peek() === '(') throw bad(`names t_... and u_... are the renderer's helpers`);
      const x = /^x(\d+)$/.exec(t);
      if (x !== null && arity !== undefined && Number(x[1]) >= arity)
        throw bad(`it reads ${t}, but the op has ${arity} input${arity === 1 ? '' : 's'}`);
      // A template list (`vec2<f32>(...)`, `bitcast<u32>(...)`): identifiers between < and > then a call.
      if (peek() === '<' && ident(toks[k + 1]) && toks[k + 2] === '>' && toks[k + 3] === '(') k += 3;
      if (peek() === '(') args();
    } else if (!/^[.\d]/.test(t)) throw bad(`unexpected ${JSON.stringify(t)}`);
    for (;;) {
      if (peek() === '[') {
        k++;
        expr();
        take(']');
      } else if (peek() === '.') {
        k++;
        if (!ident(peek())) throw bad('a member name must follow "."');
        k++;
      } else return;
    }
  };
  const unary = (): void => {
    while (peek() === '-' || peek() === '!' || peek() === '~') k++;
    primary();
  };
  function expr(): void {
    unary();
    while (BINARY.has(peek() ?? '')) {
      k++;
      unary();
    }
  }
  expr();
  if (k < toks.length) throw bad(`unexpected ${JSON.stringify(toks[k])} after the expression`);
  return src;
}

/** Each user helper's source by its name (the names are per op, input count and attrs). */
const helpers = new Map<string, string>();
const names = new Map<string, string>();

/** The helper of `op` over `nInputs` inputs with `attrs` bound: `u_<op>_<n>(x0: f32, ...) -> f32`. */
function helperName(op: string, attrs: Attrs, nInputs: number, src: string): string {
  const key = `${op}|${nInputs}|${attrsKey(attrs)}`;
  let name = names.get(key);
  if (name === undefined) {
    name = `u_${op}_${names.size}`;
    names.set(key, name);
    const used = new Set(src.match(/[A-Za-z_][A-Za-z0-9_]*/g) ?? []);
    // Only the attrs the template names: an attr named like a WGSL keyword it does not use stays out.
    const consts = scalarAttrs(attrs)
      .filter(([k]) => used.has(k))
      .map(([k, v]) => `let ${k}: f32 = ${f32Literal(v)}; `)
      .join('');
    const params = Array.from({ length: nInputs }, (_, i) => `x${i}: f32`).join(', ');
    // f32(...) takes a bool or integer result as the op's value (1 or 0; the number).
    helpers.set(
      name,
      `// user op ${op}: its wgsl template\nfn ${name}(${params}) -> f32 { ${consts}return f32(${src}\n); }`,
    );
  }
  return name;
}

/** The WGSL spelling of a kernel IR call of a user op's scalar function; undefined: not one, or its op has no wgsl template. */
export function userWgslCall(fn: ScalarFn): Render | undefined {
  const u = userCallOf(fn);
  const src = u === undefined ? undefined : userTemplates(u.op)?.wgsl;
  if (u === undefined || src === undefined) return undefined;
  const name = helperName(u.op, u.attrs, u.nInputs, src);
  return (a) => `${name}(${a.join(', ')})`;
}

/** Why a call without a WGSL spelling runs on the host. */
export function unspelledCall(fn: ScalarFn, name: string): string {
  const u = userCallOf(fn);
  return u === undefined
    ? `calls ${name}, which has no WGSL spelling yet`
    : `calls the user op ${u.op}, which was defined without a wgsl template (give defineOp a wgsl expression of x0, x1, ..., such as wgsl: 'x0 * x1')`;
}

/** The sources of the user helpers a shader body calls. */
export function userHelperSources(body: string): string[] {
  return [...new Set(body.match(/\bu_[A-Za-z0-9_]+(?=\()/g) ?? [])].map((n) => {
    const s = helpers.get(n);
    if (s === undefined) throw new Error(`internal: no WGSL user helper ${n}`);
    return s;
  });
}
