// Index arithmetic over loop variables, kept in affine normal form: sum of coef * atom plus a
// constant, where an atom is a loop variable or a floor division / floor modulo of another
// index expression by a constant. Broadcasting, transposes, slices and reshapes all become
// index expressions, and the simplifier (with the variables' ranges) turns the div/mod that a
// reshape introduces back into affine terms whenever the layout allows (tinygrad's symbolic).

import { stridesOf } from '../../ir/ndarray.js';

/** A loop variable: 0 <= v < size. */
export interface Var {
  readonly id: number;
  readonly size: number;
}

export type Atom =
  | { readonly kind: 'var'; readonly v: Var; readonly key: string }
  | { readonly kind: 'div'; readonly x: IExpr; readonly d: number; readonly key: string }
  | { readonly kind: 'mod'; readonly x: IExpr; readonly d: number; readonly key: string }
  /** x clamped to [lo, hi]: keeps masked loads (padding, concatenation) inside their buffer. */
  | { readonly kind: 'clamp'; readonly x: IExpr; readonly lo: number; readonly hi: number; readonly key: string };

export class IExpr {
  readonly key: string;
  constructor(
    readonly terms: readonly (readonly [Atom, number])[],
    readonly c: number,
  ) {
    this.key = terms.map(([a, k]) => `${k}*${a.key}`).join('+') + (terms.length > 0 ? `+${c}` : `${c}`);
  }
  get isConst(): boolean {
    return this.terms.length === 0;
  }
  /** Coefficient of loop variable `v` as a top-level term (0 when absent). */
  coef(v: Var): number {
    for (const [a, k] of this.terms) if (a.kind === 'var' && a.v.id === v.id) return k;
    return 0;
  }
  /** Whether `v` occurs inside a div/mod atom. */
  nonAffineIn(v: Var): boolean {
    return this.terms.some(([a]) => a.kind !== 'var' && a.x.mentions(v));
  }
  mentions(v: Var): boolean {
    return this.terms.some(([a]) => (a.kind === 'var' ? a.v.id === v.id : a.x.mentions(v)));
  }
  toString(): string {
    return this.key;
  }
}

let nextVar = 1;
/** Ids whose spelling `i<id>` is a WGSL type or reserved word (i8, i16, i32, i64): a loop variable never takes them. */
const WGSL_RESERVED_IDS: ReadonlySet<number> = new Set([8, 16, 32, 64]);
export function newVar(size: number): Var {
  while (WGSL_RESERVED_IDS.has(nextVar)) nextVar++;
  return { id: nextVar++, size };
}

// Weak by the variable itself: keyed by id, this map kept an atom for every loop
// variable of every kernel ever compiled (19.5 MB per 4,000 recompiles); now an atom lives as long
// as the kernels whose variables it names.
const varAtoms = new WeakMap<Var, Atom>();
function varAtom(v: Var): Atom {
  let a = varAtoms.get(v);
  if (a === undefined) {
    a = { kind: 'var', v, key: `v${v.id}` };
    varAtoms.set(v, a);
  }
  return a;
}

export const iconst = (c: number): IExpr => new IExpr([], c);
export const ivar = (v: Var): IExpr => new IExpr([[varAtom(v), 1]], 0);

function atomRange(a: Atom): [number, number] {
  if (a.kind === 'var') return [0, a.v.size - 1];
  const [lo, hi] = range(a.x);
  if (a.kind === 'clamp') return [Math.min(Math.max(lo, a.lo), a.hi), Math.max(Math.min(hi, a.hi), a.lo)];
  if (a.kind === 'div') return [Math.floor(lo / a.d), Math.floor(hi / a.d)];
  return lo >= 0 && hi < a.d ? [lo, hi] : [0, a.d - 1];
}

/** Inclusive bounds of the values `x` takes over its variables' ranges. */
export function range(x: IExpr): [number, number] {
  let lo = x.c;
  let hi = x.c;
  for (const [a, k] of x.terms) {
    const [l, h] = atomRange(a);
    if (k >= 0) {
      lo += k * l;
      hi += k * h;
    } else {
      lo += k * h;
      hi += k * l;
    }
  }
  return [lo, hi];
}

/** Sums like terms, drops zeros, sorts by key, and folds d*(x div d) + (x mod d) back into x. */
function normalize(terms: Map<string, [Atom, number]>, c: number): IExpr {
  for (let changed = true; changed; ) {
    changed = false;
    for (const [key, [a, k]] of terms) {
      if (a.kind !== 'mod') continue;
      // The partner of (x mod d) is (x div d); when x = y div e, that one is kept as (y div e*d).
      let divKey = `(${a.x.key})/${a.d}`;
      let div = terms.get(divKey);
      const inner = a.x.terms.length === 1 && a.x.c === 0 && a.x.terms[0]![1] === 1 ? a.x.terms[0]![0] : undefined;
      if (div === undefined && inner !== undefined && inner.kind === 'div') {
        divKey = `(${inner.x.key})/${inner.d * a.d}`;
        div = terms.get(divKey);
      }
      if (div === undefined || div[1] !== k * a.d) continue;
      terms.delete(key);
      terms.delete(divKey);
      for (const [b, kb] of a.x.terms) addTerm(terms, b, kb * k);
      c += a.x.c * k;
      changed = true;
      break;
    }
  }
  const list = [...terms.values()].filter(([, k]) => k !== 0).sort((p, q) => naturalCompare(p[0].key, q[0].key));
  return new IExpr(list, c);
}

/**
 * Orders keys with their digit runs compared as numbers (`v9` before `v10`), so a sum's term order
 * follows the loop variables' creation order within a kernel and not the digits of a process-wide counter.
 */
export function naturalCompare(a: string, b: string): number {
  let i = 0,
    j = 0;
  while (i < a.length && j < b.length) {
    const ca = a.charCodeAt(i),
      cb = b.charCodeAt(j);
    if (isDigit(ca) && isDigit(cb)) {
      let ei = i,
        ej = j;
      while (ei < a.length && isDigit(a.charCodeAt(ei))) ei++;
      while (ej < b.length && isDigit(b.charCodeAt(ej))) ej++;
      const na = Number(a.slice(i, ei)),
        nb = Number(b.slice(j, ej));
      if (na !== nb) return na - nb;
      i = ei;
      j = ej;
    } else {
      if (ca !== cb) return ca - cb;
      i++;
      j++;
    }
  }
  return a.length - i - (b.length - j);
}

const isDigit = (c: number): boolean => c >= 48 && c <= 57;

function addTerm(terms: Map<string, [Atom, number]>, a: Atom, k: number): void {
  const t = terms.get(a.key);
  if (t === undefined) terms.set(a.key, [a, k]);
  else t[1] += k;
}

export function iadd(...xs: IExpr[]): IExpr {
  const terms = new Map<string, [Atom, number]>();
  let c = 0;
  for (const x of xs) {
    for (const [a, k] of x.terms) addTerm(terms, a, k);
    c += x.c;
  }
  return normalize(terms, c);
}

export function iscale(x: IExpr, k: number): IExpr {
  if (k === 0) return iconst(0);
  return new IExpr(
    x.terms.map(([a, j]) => [a, j * k] as const),
    x.c * k,
  );
}

/** x = d*q + r with q collecting the terms divisible by d; when 0 <= r < d always, floor(x/d) = q and x mod d = r. */
function split(x: IExpr, d: number): { q: IExpr; r: IExpr } | undefined {
  const qs: [Atom, number][] = [];
  const rs: [Atom, number][] = [];
  for (const [a, k] of x.terms) (k % d === 0 ? qs : rs).push([a, k]);
  const cq = Math.floor(x.c / d);
  const r = new IExpr(rs, x.c - cq * d);
  const [lo, hi] = range(r);
  if (lo < 0 || hi >= d) return undefined;
  return {
    q: new IExpr(
      qs.map(([a, k]) => [a, k / d] as const),
      cq,
    ),
    r,
  };
}

/** Floor division by a positive integer. */
export function idiv(x: IExpr, d: number): IExpr {
  if (d === 1) return x;
  if (x.isConst) return iconst(Math.floor(x.c / d));
  const s = split(x, d);
  if (s !== undefined) return s.q;
  if (x.terms.length === 1 && x.c === 0) {
    const [a, k] = x.terms[0]!;
    if (a.kind === 'div' && k === 1) return idiv(a.x, a.d * d); // floor(floor(y/a)/d) = floor(y/(a d))
  }
  return new IExpr([[{ kind: 'div', x, d, key: `(${x.key})/${d}` }, 1]], 0);
}

/** Floor modulo by a positive integer (the result is in [0, d)). */
export function imod(x: IExpr, d: number): IExpr {
  if (d === 1) return iconst(0);
  if (x.isConst) return iconst(((x.c % d) + d) % d);
  const s = split(x, d);
  if (s !== undefined) return s.r;
  return new IExpr([[{ kind: 'mod', x, d, key: `(${x.key})%${d}` }, 1]], 0);
}

/** x clamped to [lo, hi] (lo <= hi). */
export function iclamp(x: IExpr, lo: number, hi: number): IExpr {
  const [xlo, xhi] = range(x);
  if (xlo >= lo && xhi <= hi) return x;
  if (xhi <= lo) return iconst(lo);
  if (xlo >= hi) return iconst(hi);
  return new IExpr([[{ kind: 'clamp', x, lo, hi, key: `clamp(${x.key},${lo},${hi})` }, 1]], 0);
}

/** Flat row-major offset of coordinates in `shape`. */
export function ravel(coords: readonly IExpr[], shape: readonly number[]): IExpr {
  const st = stridesOf(shape);
  return iadd(...coords.map((c, i) => iscale(c, shape[i] === 1 ? 0 : st[i]!)));
}

/** Coordinates in `shape` of a flat row-major offset. */
export function unravel(flat: IExpr, shape: readonly number[]): IExpr[] {
  const st = stridesOf(shape);
  return shape.map((d, i) => (d === 1 ? iconst(0) : i === 0 ? idiv(flat, st[i]!) : imod(idiv(flat, st[i]!), d)));
}

/** Replaces variables by expressions (used when loop dims are merged). */
export function substitute(x: IExpr, f: (v: Var) => IExpr | undefined): IExpr {
  const parts: IExpr[] = [iconst(x.c)];
  for (const [a, k] of x.terms) {
    if (a.kind === 'var') parts.push(iscale(f(a.v) ?? ivar(a.v), k));
    else {
      const inner = substitute(a.x, f);
      parts.push(
        iscale(
          a.kind === 'div' ? idiv(inner, a.d) : a.kind === 'mod' ? imod(inner, a.d) : iclamp(inner, a.lo, a.hi),
          k,
        ),
      );
    }
  }
  return iadd(...parts);
}

/** How a target's source spells an index expression's parts (gpu/render.ts for gpu.js, wgsl/writer.ts for WGSL). */
export interface IndexSpelling {
  /** An integer constant. */
  int(n: number): string;
  clamp(inner: string, lo: number, hi: number): string;
  /** Floor division and floor modulo by d > 0; `nonNeg` when the dividend is never negative. */
  div(inner: string, d: number, nonNeg: boolean): string;
  mod(inner: string, d: number, nonNeg: boolean): string;
}

/** An index expression as source text: its terms summed in order, in the target's spelling. */
export function spellIndex(x: IExpr, sp: IndexSpelling): string {
  const parts: string[] = [];
  for (const [a, k] of x.terms) {
    let t: string;
    if (a.kind === 'var') t = `i${a.v.id}`;
    else {
      const inner = spellIndex(a.x, sp);
      const nonNeg = range(a.x)[0] >= 0;
      if (a.kind === 'clamp') t = sp.clamp(inner, a.lo, a.hi);
      else if (a.kind === 'div') t = sp.div(inner, a.d, nonNeg);
      else t = sp.mod(inner, a.d, nonNeg);
    }
    parts.push(k === 1 ? t : `${t} * ${sp.int(k)}`);
  }
  if (x.c !== 0 || parts.length === 0) parts.push(sp.int(x.c));
  return parts.length === 1 ? parts[0]! : `(${parts.join(' + ')})`;
}
