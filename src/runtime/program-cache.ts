// The caches every device's compiler keeps (src/runtime/compile.ts for the cpu, gpu/compile.ts):
// optimized graphs by structural key, and inside each, shape specialisations by input shapes.
// Both are least-recently-used and bounded (a process that builds many functions, or calls one
// with many batch sizes, keeps only the most recent). Theano caches compiled thunks the same
// way per function; here the key is the graph's structure, so rebuilt graphs share code.

/** The most optimized graphs kept (per device). */
export const MAX_PROGRAMS = 256;
/** The most shape specialisations kept per optimized graph. */
export const MAX_SPECIALIZATIONS = 16;

/** A cached program: whatever a device keeps per graph structure, with its specialisations by shape key. */
export interface CachedProgram<S> {
  readonly specs: Map<string, S>;
}

/** The key of a list of input shapes. */
export const shapesKey = (shapes: readonly (readonly number[])[]): string => shapes.map((s) => s.join('x')).join('|');

export class ProgramCache<P extends CachedProgram<S>, S> {
  private readonly programs = new Map<string, P>();

  constructor(
    /** Told of every specialisation the cache drops (a device that accounts for their memory). */
    private readonly onDropSpec: (program: P, key: string, spec: S) => void = () => {},
    private readonly maxPrograms = MAX_PROGRAMS,
    private readonly maxSpecs = MAX_SPECIALIZATIONS,
  ) {}

  /** The program cached under `key`, made by `make` on a miss; most recently used last. */
  program(key: string, make: () => P): P {
    let p = this.programs.get(key);
    if (p === undefined) {
      p = make();
      if (this.programs.size >= this.maxPrograms) this.programs.delete(this.programs.keys().next().value!);
    } else this.programs.delete(key);
    this.programs.set(key, p);
    return p;
  }

  /** The specialisation of `p` for shape key `key`, made by `make` on a miss; most recently used last. */
  spec(p: P, key: string, make: () => S): S {
    let s = p.specs.get(key);
    if (s === undefined) {
      s = make();
      if (p.specs.size >= this.maxSpecs) {
        const [oldKey, old] = p.specs.entries().next().value!;
        p.specs.delete(oldKey);
        this.onDropSpec(p, oldKey, old);
      }
    } else p.specs.delete(key);
    p.specs.set(key, s);
    return s;
  }

  clear(): void {
    this.programs.clear();
  }
}
