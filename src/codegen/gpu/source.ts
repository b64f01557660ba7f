// Building the source of one gpu.js kernel: a function of its arguments, run once per element
// of a flat (1-D) output, whose body computes that element. Shapes and loop bounds are
// constants in the source, so a kernel is specialised to the shapes of a call.
//
// Index arithmetic is written with integer literals (`Math.floor(i / 12)`, `i % 3`): gpu.js
// computes it in float32 with an exactness correction on division, so every index must stay
// below 2^24 (kernels larger than that are not rendered; see MAX_ELEMENTS).
import { helperSources, helpersIn } from './scalar.js';
import { sizeOf, stridesOf } from '../../ir/ndarray.js';

/** Float32 holds every integer up to 2^24 exactly; indices beyond it would round. */
export const MAX_ELEMENTS = 2 ** 24;

export interface KernelSource {
  /** gpu.js kernel function source. */
  readonly source: string;
  /** Helper function sources it calls (gpu.js' `functions` setting). */
  readonly functions: readonly string[];
  /** Number of output elements (the kernel's 1-D output size). */
  readonly size: number;
}

/** `sum_k coef_k * term_k + c` as integer index source, dropping zero terms. */
export function affine(terms: readonly (readonly [number, string])[], c = 0): string {
  const parts: string[] = [];
  for (const [k, t] of terms) {
    if (k === 0 || t === '0') continue;
    parts.push(k === 1 ? t : `${t} * ${k}`);
  }
  if (parts.length === 0) return String(c);
  if (c !== 0) parts.push(String(Math.abs(c)));
  const sum = parts.slice(0, c < 0 ? -1 : undefined).join(' + ') + (c < 0 ? ` - ${parts[parts.length - 1]}` : '');
  return parts.length === 1 ? parts[0]! : `(${sum})`;
}

/**
 * The body of one kernel under construction: declarations in order, coordinates of the output
 * index declared on first use, loop variables named uniquely.
 */
export class KernelBuilder {
  private lines: string[] = [];
  /** Coordinate declarations come first: they depend on the output index only. */
  private readonly coordLines: string[] = [];
  private readonly coords = new Map<number, string>();
  private readonly strides: number[];
  private names = 0;

  /** `shape` is the logical shape whose row-major order the output index walks. */
  constructor(readonly shape: readonly number[]) {
    this.strides = stridesOf(shape);
  }

  arg(k: number): string {
    return `a${k}`;
  }

  fresh(prefix: string): string {
    return `${prefix}_${this.names++}`;
  }

  line(s: string): void {
    this.lines.push(s);
  }

  /** Coordinate `d` of the output index: floor(i / stride_d) mod shape_d. */
  coord(d: number): string {
    const hit = this.coords.get(d);
    if (hit !== undefined) return hit;
    const st = this.strides[d]!;
    const n = this.shape[d]!;
    const q = st === 1 ? 'i' : `Math.floor(i / ${st})`;
    const name = `c${d}`;
    this.coordLines.push(`const ${name} = ${d === 0 ? q : `${q} % ${n}`};`);
    this.coords.set(d, name);
    return name;
  }

  /** Flat offset into a buffer read with `strides` per output axis (0 where broadcast). */
  offset(strides: readonly number[], base = 0): string {
    // The output's own layout (or a suffix of it) needs no coordinates at all.
    if (strides.every((s, d) => s === this.strides[d] || this.shape[d] === 1)) return affine([[1, 'i']], base);
    return affine(
      strides.map(
        (s, d) => [this.shape[d] === 1 ? 0 : s, s === 0 || this.shape[d] === 1 ? '' : this.coord(d)] as const,
      ),
      base,
    );
  }

  /** Runs `f` with its lines collected apart (for a block nested in a loop); returns them joined. */
  capture(f: () => void): string {
    const saved = this.lines;
    this.lines = [];
    try {
      f();
      return this.lines.join(' ');
    } finally {
      this.lines = saved;
    }
  }

  /** The kernel returning `result`, taking arguments a0 .. a(nargs-1). */
  finish(result: string, nargs: number): KernelSource {
    const params = Array.from({ length: nargs }, (_, k) => this.arg(k));
    const body = ['const i = this.thread.x;', ...this.coordLines, ...this.lines, `return ${result};`];
    const source = `function (${params.join(', ')}) {\n${body.map((l) => `  ${l}`).join('\n')}\n}`;
    const size = sizeOf(this.shape);
    return { source, functions: helperSources(helpersIn(source)), size };
  }
}

/**
 * Loop iterations one invocation of a kernel may run, all loops together (each loop's bound
 * times the bounds of the loops around it), read from the source this module writes.
 */
export function loopIterations(source: string): number {
  let total = 0;
  const mult: number[] = [1];
  for (const m of source.matchAll(/for \(let \w+ = 0; \w+ < (\d+); \w+\+\+\) \{|\{|\}/g)) {
    const top = mult[mult.length - 1]!;
    if (m[1] !== undefined) {
      const n = top * Number(m[1]);
      total += n;
      mult.push(n);
    } else if (m[0] === '{') mult.push(top);
    else mult.pop();
  }
  return total;
}
