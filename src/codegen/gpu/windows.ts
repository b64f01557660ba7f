// gpu kernels of the sliding-window ops (conv, conv_transpose, conv_kernel_grad, pool, pool_grad,
// pool_select), channels-last as in src/ir/ops/conv.ts and pool.ts. Every kernel is a gather:
// each output element loops over the (output, tap, input) triples of the window geometry that
// touch it, with in = out * stride + tap * dilation - padBefore per spatial dim, so the adjoint
// ops (which the reference writes as scatters) read instead of write.
import type { OpName } from '../../ir/registry.js';
import { padsFor, type WindowAttrs } from '../../ir/ops/window.js';
import type { PoolAttrs } from '../../ir/ops/pool.js';
import { KernelBuilder, affine } from './source.js';
import type { ExternNode } from './extern.js';

/** What a window rule builds: the kernel body's result and the inputs it loaded, in order. */
export interface Body {
  readonly b: KernelBuilder;
  readonly result: string;
  readonly args: readonly number[];
}

interface Dims {
  readonly n: number;
  /** Input (data) spatial sizes. */
  readonly s: readonly number[];
  /** Window sizes. */
  readonly k: readonly number[];
  /** Output spatial sizes. */
  readonly o: readonly number[];
  readonly stride: readonly number[];
  readonly dil: readonly number[];
  readonly pb: readonly number[];
}

function dims(a: WindowAttrs, n: number, s: readonly number[], k: readonly number[], o: readonly number[]): Dims {
  return { n, s, k, o, stride: a.strides, dil: a.dilation, pb: s.map((si, i) => padsFor(si, k[i]!, a.strides[i]!, a.dilation[i]!, a.padding)[0]) };
}

/** Row-major flat offset of (n, spatial..., channel) in a (N, sizes..., C) array, as source. */
function cell(n: string, sp: readonly string[], sizes: readonly number[], C: number, ch: string): string {
  let acc = n;
  sp.forEach((p, i) => { acc = `(${acc} * ${sizes[i]} + ${p})`; });
  return C === 1 && ch === '0' ? acc : affine([[C, acc], [1, ch]]);
}

class Code {
  private readonly parts: string[] = [];
  private depth = 0;
  constructor(readonly b: KernelBuilder) {}
  open(s: string): void { this.parts.push(`${s} {`); this.depth++; }
  stmt(s: string): void { this.parts.push(s); }
  done(): void {
    this.b.line(`${this.parts.join(' ')} ${'}'.repeat(this.depth)}`.trim());
  }
}

/** Loops over the taps of windows whose input position `p_k = o_k * stride + t_k * dil - pb` is inside the data. */
function tapsInside(c: Code, g: Dims, o: readonly string[], fresh: (p: string) => string): { t: string[]; p: string[] } {
  const t: string[] = [];
  const p: string[] = [];
  g.k.forEach((kk, i) => {
    const ti = fresh('t');
    const pi = fresh('p');
    c.open(`for (let ${ti} = 0; ${ti} < ${kk}; ${ti}++)`);
    c.stmt(`const ${pi} = ${affine([[g.stride[i]!, o[i]!], [g.dil[i]!, ti]], -g.pb[i]!)};`);
    c.open(`if (${pi} >= 0 && ${pi} < ${g.s[i]})`);
    t.push(ti);
    p.push(pi);
  });
  return { t, p };
}

/** Loops over the windows (output positions o_k) that read input position `x_k` at tap t_k. */
function windowsReading(c: Code, g: Dims, x: readonly string[], fresh: (p: string) => string): { t: string[]; o: string[] } {
  const t: string[] = [];
  const o: string[] = [];
  g.k.forEach((kk, i) => {
    const ti = fresh('t');
    const qi = fresh('q');
    const oi = fresh('o');
    c.open(`for (let ${ti} = 0; ${ti} < ${kk}; ${ti}++)`);
    c.stmt(`const ${qi} = ${affine([[1, x[i]!], [-g.dil[i]!, ti]], g.pb[i]!)};`);
    c.stmt(`const ${oi} = Math.floor(${qi} / ${g.stride[i]});`);
    c.open(`if (${qi} >= 0 && ${oi} * ${g.stride[i]} == ${qi} && ${oi} < ${g.o[i]})`);
    t.push(ti);
    o.push(oi);
  });
  return { t, o };
}

const windowOffset = (t: readonly string[], k: readonly number[]) => t.reduce((acc, ti, i) => (i === 0 ? ti : `(${acc} * ${k[i]} + ${ti})`), '0');

type Rule = (n: ExternNode, b: KernelBuilder, load: (k: number, off: string) => string) => string;

const conv: Rule = (n, b, load) => {
  const [x, w] = n.inputs;
  const a = n.attrs as unknown as WindowAttrs & { groups: number };
  const d = x!.shape.length - 2;
  const [C, Cg, F] = [x!.shape[d + 1]!, w!.shape[d]!, w!.shape[d + 1]!];
  const g = dims(a, x!.shape[0]!, x!.shape.slice(1, d + 1), w!.shape.slice(0, d), n.shape.slice(1, d + 1));
  const fresh = (p: string) => b.fresh(p);
  const [nb, f] = [b.coord(0), b.coord(d + 1)];
  const o = g.o.map((_, i) => b.coord(i + 1));
  const s = b.fresh('s');
  const ch0 = b.fresh('g');
  b.line(`let ${s} = 0.0;`);
  b.line(`const ${ch0} = ${a.groups === 1 ? '0' : `Math.floor(${f} / ${F / a.groups}) * ${Cg}`};`);
  const c = new Code(b);
  const { t, p } = tapsInside(c, g, o, fresh);
  const ci = fresh('c');
  c.open(`for (let ${ci} = 0; ${ci} < ${Cg}; ${ci}++)`);
  c.stmt(`${s} += ${load(0, cell(nb, p, g.s, C, `${ch0} + ${ci}`))} * ${load(1, affine([[Cg * F, windowOffset(t, g.k)], [F, ci], [1, f]]))};`);
  c.done();
  return s;
};

const convTranspose: Rule = (n, b, load) => {
  const [dy, w] = n.inputs;
  const a = n.attrs as unknown as WindowAttrs & { groups: number };
  const d = dy!.shape.length - 2;
  const [Cg, F] = [w!.shape[d]!, w!.shape[d + 1]!];
  const Fg = F / a.groups;
  const g = dims(a, dy!.shape[0]!, n.shape.slice(1, d + 1), w!.shape.slice(0, d), dy!.shape.slice(1, d + 1));
  const fresh = (p: string) => b.fresh(p);
  const [nb, ch] = [b.coord(0), b.coord(d + 1)];
  const xs = g.s.map((_, i) => b.coord(i + 1));
  const s = b.fresh('s');
  const grp = b.fresh('g');
  const cc = b.fresh('c');
  b.line(`let ${s} = 0.0;`);
  b.line(`const ${grp} = Math.floor(${ch} / ${Cg});`);
  b.line(`const ${cc} = ${ch} - ${grp} * ${Cg};`);
  const c = new Code(b);
  const { t, o } = windowsReading(c, g, xs, fresh);
  const fi = fresh('f');
  c.open(`for (let ${fi} = 0; ${fi} < ${Fg}; ${fi}++)`);
  const ff = `(${grp} * ${Fg} + ${fi})`;
  c.stmt(`${s} += ${load(0, cell(nb, o, g.o, F, ff))} * ${load(1, affine([[Cg * F, windowOffset(t, g.k)], [F, cc], [1, ff]]))};`);
  c.done();
  return s;
};

const convKernelGrad: Rule = (n, b, load) => {
  const [x, dy] = n.inputs;
  const a = n.attrs as unknown as WindowAttrs & { groups: number };
  const d = x!.shape.length - 2;
  const [C, F] = [x!.shape[d + 1]!, dy!.shape[d + 1]!];
  const Cg = C / a.groups;
  const g = dims(a, x!.shape[0]!, x!.shape.slice(1, d + 1), n.shape.slice(0, d), dy!.shape.slice(1, d + 1));
  const fresh = (p: string) => b.fresh(p);
  const t = g.k.map((_, i) => b.coord(i));
  const [ci, f] = [b.coord(d), b.coord(d + 1)];
  const s = b.fresh('s');
  const ch0 = b.fresh('g');
  b.line(`let ${s} = 0.0;`);
  b.line(`const ${ch0} = ${a.groups === 1 ? '0' : `Math.floor(${f} / ${F / a.groups}) * ${Cg}`};`);
  const c = new Code(b);
  const nb = fresh('n');
  c.open(`for (let ${nb} = 0; ${nb} < ${g.n}; ${nb}++)`);
  const o: string[] = [];
  const p: string[] = [];
  g.o.forEach((oo, i) => {
    const oi = fresh('o');
    const pi = fresh('p');
    c.open(`for (let ${oi} = 0; ${oi} < ${oo}; ${oi}++)`);
    c.stmt(`const ${pi} = ${affine([[g.stride[i]!, oi], [g.dil[i]!, t[i]!]], -g.pb[i]!)};`);
    c.open(`if (${pi} >= 0 && ${pi} < ${g.s[i]})`);
    o.push(oi);
    p.push(pi);
  });
  c.stmt(`${s} += ${load(0, cell(nb, p, g.s, C, `${ch0} + ${ci}`))} * ${load(1, cell(nb, o, g.o, F, f))};`);
  c.done();
  return s;
};

/**
 * The first maximal cell of window `o` (NaN counts as maximal): declares `best` and `arg` (the
 * flat (n, spatial) cell of the input) after looping the window.
 */
function argMax(b: KernelBuilder, g: Dims, nb: string, o: readonly string[], ch: string, C: number, load: (k: number, off: string) => string): { best: string; arg: string } {
  const best = b.fresh('m');
  const arg = b.fresh('a');
  const found = b.fresh('h');
  b.line(`let ${best} = 0.0; let ${arg} = 0.0; let ${found} = 0.0;`);
  const c = new Code(b);
  const { p } = tapsInside(c, g, o, (q) => b.fresh(q));
  const v = b.fresh('v');
  const at = cell(nb, p, g.s, 1, '0');
  c.stmt(`const ${v} = ${load(0, affine([[C, at], [1, ch]]))};`);
  c.open(`if (${found} == 0.0 || ${v} > ${best} || (${v} != ${v} && ${best} == ${best}))`);
  c.stmt(`${best} = ${v}; ${arg} = ${at}; ${found} = 1.0;`);
  c.done();
  return { best, arg };
}

/** Number of input cells under window `o` (padding excluded): a product of per-dim counts. */
function windowCount(b: KernelBuilder, g: Dims, o: readonly string[]): string {
  const cnt = b.fresh('n');
  b.line(`let ${cnt} = 1.0;`);
  g.k.forEach((kk, i) => {
    const ci = b.fresh('k');
    const ti = b.fresh('t');
    const pi = b.fresh('p');
    b.line(`let ${ci} = 0.0; for (let ${ti} = 0; ${ti} < ${kk}; ${ti}++) { const ${pi} = ${affine([[g.stride[i]!, o[i]!], [g.dil[i]!, ti]], -g.pb[i]!)}; if (${pi} >= 0 && ${pi} < ${g.s[i]}) { ${ci} += 1.0; } } ${cnt} *= ${ci};`);
  });
  return cnt;
}

function poolDims(x: readonly number[], a: PoolAttrs, out: readonly number[]): Dims {
  const d = a.window.length;
  return dims(a, x[0]!, x.slice(1, d + 1), a.window, out.slice(1, d + 1));
}

const pool: Rule = (n, b, load) => {
  const x = n.inputs[0]!;
  const a = n.attrs as unknown as PoolAttrs;
  const d = a.window.length;
  const C = x.shape[d + 1]!;
  const g = poolDims(x.shape, a, n.shape);
  const [nb, ch] = [b.coord(0), b.coord(d + 1)];
  const o = g.o.map((_, i) => b.coord(i + 1));
  if (a.mode === 'max') return argMax(b, g, nb, o, ch, C, load).best;
  const s = b.fresh('s');
  b.line(`let ${s} = 0.0;`);
  const c = new Code(b);
  const { p } = tapsInside(c, g, o, (q) => b.fresh(q));
  c.stmt(`${s} += ${load(0, cell(nb, p, g.s, C, ch))};`);
  c.done();
  return `${s} / ${windowCount(b, g, o)}`;
};

const poolSelect: Rule = (n, b, load) => {
  const x = n.inputs[0]!;
  const a = n.attrs as unknown as PoolAttrs;
  const d = a.window.length;
  const C = x.shape[d + 1]!;
  const g = poolDims(x.shape, a, n.shape);
  const [nb, ch] = [b.coord(0), b.coord(d + 1)];
  const { arg } = argMax(b, g, nb, g.o.map((_, i) => b.coord(i + 1)), ch, C, load);
  return load(1, affine([[C, arg], [1, ch]]));
};

const poolGrad: Rule = (n, b, load) => {
  const x = n.inputs[0]!;
  const dy = n.inputs[1]!;
  const a = n.attrs as unknown as PoolAttrs;
  const d = a.window.length;
  const C = x.shape[d + 1]!;
  const g = poolDims(x.shape, a, dy.shape);
  const [nb, ch] = [b.coord(0), b.coord(d + 1)];
  const xs = g.s.map((_, i) => b.coord(i + 1));
  const s = b.fresh('s');
  b.line(`let ${s} = 0.0;`);
  const c = new Code(b);
  const { o } = windowsReading(c, g, xs, (q) => b.fresh(q));
  const grad = load(1, cell(nb, o, g.o, C, ch));
  // The count and argmax loops are statements of the innermost window block.
  if (a.mode === 'avg') {
    let cnt = '';
    c.stmt(b.capture(() => { cnt = windowCount(b, g, o); }));
    c.stmt(`${s} += ${grad} / ${cnt};`);
  } else {
    let arg = '';
    c.stmt(b.capture(() => { arg = argMax(b, g, nb, o, ch, C, load).arg; }));
    c.open(`if (${arg} == ${cell(nb, xs, g.s, 1, '0')})`);
    c.stmt(`${s} += ${grad};`);
  }
  c.done();
  return s;
};

const rules: Partial<Record<OpName, Rule>> = {
  conv, conv_transpose: convTranspose, conv_kernel_grad: convKernelGrad, pool, pool_select: poolSelect, pool_grad: poolGrad,
};

/** Renders a window op, or undefined when it has no rule here. */
export function windowed(n: ExternNode): Body | undefined {
  const rule = rules[n.op as OpName];
  if (rule === undefined) return undefined;
  const b = new KernelBuilder(n.shape);
  const used: number[] = [];
  const load = (k: number, off: string) => {
    let j = used.indexOf(k);
    if (j < 0) { j = used.length; used.push(k); }
    return `a${j}[${off}]`;
  };
  const result = rule(n, b, load);
  return { b, result, args: used };
}
