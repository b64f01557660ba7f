// The cache every target keeps (src/runtime/target.ts): optimized graphs by structural key, and
// inside each, shape specialisations by input shapes. Both are least-recently-used and bounded (a
// process that builds many functions, or calls one with many batch sizes, keeps only the most
// recent); specialisations that hold memory are also bounded in bytes over all programs (except
// each program's most recently used one: two functions called in turn, each holding more than the
// budget, keep their buffers, as Theano's functions keep their storage), and a program's
// specialisations go once no live function uses it. Theano caches compiled thunks the
// same way per function; here the key is the graph's structure, so rebuilt graphs share code.
//
// Shape policy: a specialisation is code (small) plus the buffers it holds once run (large). The
// byte budget sheds buffers, not code, where the target can (`shed`): a function cycling more
// batch sizes than fit in the budget keeps every compiled shape and re-allocates the buffers of
// the shape it comes back to (microseconds), instead of compiling it again (milliseconds; LRU over
// a cycle longer than the cache missed on every call). Code is bounded by count, per program and
// over all programs.

/** The most optimized graphs kept (per target). */
export const MAX_PROGRAMS = 256;
/** The most shape specialisations kept per optimized graph (a batch size or sequence length each). */
export const MAX_SPECIALIZATIONS = 16;
/** The same where the target sheds buffers (`shed`): what is kept per shape is then code only. */
export const MAX_SHED_SPECIALIZATIONS = 64;
/** The most shape specialisations kept over every program of a cache. */
export const MAX_TOTAL_SPECIALIZATIONS = 1024;

/** The last (most recently used) value of `m`. */
function newest<S>(m: ReadonlyMap<string, S>): S | undefined {
  let last: S | undefined;
  for (const v of m.values()) last = v;
  return last;
}

/** A cached program: whatever a target keeps per graph structure, with its specialisations by shape key. */
export interface CachedProgram<S> {
  readonly specs: Map<string, S>;
}

/** The key of a list of input shapes. */
export const shapesKey = (shapes: readonly (readonly number[])[]): string => shapes.map((s) => s.join('x')).join('|');

export interface ProgramCacheOptions<P, S> {
  /** Told of every specialisation the cache drops (a target that releases what it holds). */
  readonly onDropSpec?: (program: P, key: string, spec: S) => void;
  readonly maxPrograms?: number;
  readonly maxSpecs?: number;
  /** Bytes a specialisation holds, and the most all of them may hold together (least recently used go first). */
  readonly bytes?: (spec: S) => number;
  readonly budgetBytes?: number;
  /**
   * Lets a specialisation's buffers go and keeps its code (it allocates them again when run):
   * what the byte budget does first, where given; without it the budget drops the specialisation.
   */
  readonly shed?: (spec: S) => void;
  readonly maxTotalSpecs?: number;
}

export class ProgramCache<P extends CachedProgram<S>, S> {
  private readonly programs = new Map<string, P>();
  /** Specialisations of every program holding buffers, least recently used first (the byte budget's order). */
  private readonly used = new Map<S, { readonly program: P; readonly key: string }>();
  /** Every cached specialisation, least recently used first (the total count's order). */
  private readonly all = new Map<S, { readonly program: P; readonly key: string }>();
  private held = 0;
  /** Live functions per program: when the last one is collected, the program's specialisations go. */
  private readonly live = new Map<P, number>();
  private readonly collected = new FinalizationRegistry<P>((p) => {
    const n = (this.live.get(p) ?? 1) - 1;
    if (n > 0) {
      this.live.set(p, n);
      return;
    }
    this.live.delete(p);
    for (const [key, s] of [...p.specs]) this.drop(p, key, s);
  });
  private readonly onDropSpec: (program: P, key: string, spec: S) => void;
  private readonly maxPrograms: number;
  private readonly maxSpecs: number;
  private readonly bytes: (spec: S) => number;
  private readonly budgetBytes: number;
  private readonly shed: ((spec: S) => void) | undefined;
  private readonly maxTotalSpecs: number;
  /** Specialisations whose buffers the budget let go so far (tests read it). */
  shedCount = 0;

  constructor(options: ProgramCacheOptions<P, S> = {}) {
    this.onDropSpec = options.onDropSpec ?? (() => {});
    this.maxPrograms = options.maxPrograms ?? MAX_PROGRAMS;
    this.maxSpecs = options.maxSpecs ?? (options.shed === undefined ? MAX_SPECIALIZATIONS : MAX_SHED_SPECIALIZATIONS);
    this.bytes = options.bytes ?? (() => 0);
    this.budgetBytes = options.budgetBytes ?? Infinity;
    this.shed = options.shed;
    this.maxTotalSpecs = options.maxTotalSpecs ?? MAX_TOTAL_SPECIALIZATIONS;
  }

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

  /**
   * Counts every change of what is cached or of its order (spec, drop, clear): a caller that finds
   * it where its own last spec() left it knows that specialisation is still cached and the most
   * recently used, so it may use it again without asking (target.ts' repeated-shape path).
   */
  version = 0;

  /** The specialisation of `p` for shape key `key`, made by `make` on a miss; most recently used last. */
  spec(p: P, key: string, make: () => S): S {
    this.version++;
    let s = p.specs.get(key);
    if (s === undefined) {
      s = make();
      if (p.specs.size >= this.maxSpecs) {
        const [oldKey, old] = p.specs.entries().next().value!;
        this.drop(p, oldKey, old);
      }
    } else p.specs.delete(key);
    p.specs.set(key, s);
    this.all.delete(s);
    this.all.set(s, { program: p, key });
    // a shed specialisation coming back holds its buffers again once run: counted from now
    if (this.used.delete(s)) this.used.set(s, { program: p, key });
    else {
      this.used.set(s, { program: p, key });
      this.held += this.bytes(s);
    }
    // each program's most recently used specialisation stays (its function's working set)
    const kept = new Map<P, S | undefined>();
    for (const [old, at] of this.used) {
      if (this.held <= this.budgetBytes) break;
      if (!kept.has(at.program)) kept.set(at.program, newest(at.program.specs));
      if (old === s || kept.get(at.program) === old) continue;
      if (this.shed === undefined) {
        this.drop(at.program, at.key, old);
        continue;
      }
      this.used.delete(old);
      this.held -= this.bytes(old);
      this.shedCount++;
      this.shed(old);
    }
    for (const [old, at] of this.all) {
      if (this.all.size <= this.maxTotalSpecs || old === s) break;
      this.drop(at.program, at.key, old);
    }
    return s;
  }

  /** `owner` (a function's executor) uses `p`: once every owner is collected, `p`'s specialisations go. */
  hold(owner: object, p: P): void {
    this.live.set(p, (this.live.get(p) ?? 0) + 1);
    this.collected.register(owner, p);
  }

  /** Bytes held by the cached specialisations. */
  heldBytes(): number {
    return this.held;
  }

  /** Specialisations cached over every program. */
  specCount(): number {
    return this.all.size;
  }

  private drop(p: P, key: string, s: S): void {
    this.version++;
    if (p.specs.get(key) === s) p.specs.delete(key);
    if (!this.all.delete(s)) return;
    if (this.used.delete(s)) this.held -= this.bytes(s);
    this.onDropSpec(p, key, s);
  }

  clear(): void {
    this.version++;
    this.programs.clear();
    this.used.clear();
    this.all.clear();
    this.held = 0;
    this.live.clear();
  }
}
