// The autotuner's disk cache (./tune.ts): the best schedule found for each kernel structure on
// each machine, in one JSON file, so that a later process reuses it instead of searching again
// (tinygrad keeps its BEAM results in a disk cache keyed by kernel and device: the anchor). The
// file lives in the cache folder: THEANINE_CACHE_DIR where set, else keras.json's folder. It is
// written whole to a temporary name and renamed over the old one (a reader never sees half a
// file), merged with what other processes wrote in the meantime; a file that does not parse, or
// whose entries are not schedules, is discarded (the search runs again and writes a good one).
import type * as Fs from 'node:fs';
import type * as Os from 'node:os';
import { platform } from '#platform';
import type { MatmulSchedule } from '../codegen/cpu/strategy.js';
import type { EwSchedule } from '../codegen/cpu/wasm/elementwise.js';

/** The cache file's name in the cache folder. */
export const TUNE_CACHE_FILE = 'theanine-tune.json';
const FORMAT = 'theanine-tune/3';

/** A tuned schedule as stored: the schedule (a product's, an elementwise tier kernel's or a loop kernel's order on the cpu, a loop kernel's workgroup size on WebGPU), its time and the default's (ms, medians), and what the search cost. */
export type TunedEntry = (
  | MatmulSchedule
  | EwSchedule
  | { readonly workgroup: number }
  | { readonly order: readonly number[] }
) & {
  readonly ms: number;
  readonly defaultMs: number;
  readonly searchMs: number;
  readonly candidates: number;
};

interface CacheFile {
  format: string;
  machines: Record<string, Record<string, TunedEntry>>;
}

/** What the cache did in this process (tests and the bench read it). */
export const tuneCacheStats = { loads: 0, discarded: 0, writes: 0, hits: 0 };

const fs = (): typeof Fs | undefined =>
  platform.name === 'node' ? (platform.nodeBuiltin('fs', 'the tuning cache') as typeof Fs) : undefined;

/**
 * The cache folder: THEANINE_CACHE_DIR where set (not empty), else the folder of keras.json;
 * undefined where there is no file system (a browser: schedules are then kept for the page only).
 */
export function cacheDir(): string | undefined {
  const dir = platform.env('THEANINE_CACHE_DIR');
  if (dir !== undefined && dir !== '') return dir;
  const conf = platform.kerasConfigPath(platform.environment(), undefined);
  return conf === undefined ? undefined : platform.dirname(conf);
}

/** The machine a cpu schedule was measured on (a WebGPU one: its adapter, gpu/webgpu/tune.ts adapterKey): cpu model, cores, worker threads, the Node version. */
export function machineKey(threads: number): string {
  if (platform.name !== 'node') return `browser|${platform.cores()}c|${threads}t`;
  const os = platform.nodeBuiltin('os', 'the tuning cache') as typeof Os;
  const cpus = os.cpus();
  return `${cpus[0]?.model.trim() ?? 'unknown cpu'}|${cpus.length}c|${threads}t|node ${process.version}`;
}

const isCount = (x: unknown): x is number => typeof x === 'number' && Number.isInteger(x) && x > 0;
const isTime = (x: unknown): x is number => typeof x === 'number' && Number.isFinite(x) && x >= 0;

/** A loop order as stored: a permutation of 0..n-1. */
const isOrder = (x: unknown): x is number[] =>
  Array.isArray(x) && x.length > 0 && [...x].sort((a: number, b: number) => a - b).every((v, i) => v === i);

function validEntry(e: unknown): e is TunedEntry {
  if (typeof e !== 'object' || e === null) return false;
  const r = e as Record<string, unknown>;
  const matmul =
    isCount(r['blockBytes']) && isCount(r['maxPanels']) && typeof r['split'] === 'boolean' && isCount(r['perThread']);
  return (
    (matmul ||
      (isCount(r['streams']) && typeof r['split'] === 'boolean') ||
      isCount(r['workgroup']) ||
      isOrder(r['order'])) &&
    isTime(r['ms']) &&
    isTime(r['defaultMs']) &&
    isTime(r['searchMs']) &&
    isCount(r['candidates'])
  );
}

/** The file's contents, or undefined where it is missing or corrupt (a corrupt file is counted in tuneCacheStats.discarded). */
function readFile(path: string): CacheFile | undefined {
  const f = fs();
  if (f === undefined) return undefined;
  let text: string;
  try {
    text = f.readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
  try {
    const got = JSON.parse(text) as unknown;
    if (typeof got !== 'object' || got === null) throw new Error('not an object');
    const c = got as Partial<CacheFile>;
    if (c.format !== FORMAT || typeof c.machines !== 'object' || c.machines === null)
      throw new Error('not a tuning cache');
    for (const m of Object.values(c.machines)) {
      if (typeof m !== 'object' || m === null || !Object.values(m).every(validEntry))
        throw new Error('an entry is not a schedule');
    }
    return c as CacheFile;
  } catch {
    tuneCacheStats.discarded++;
    return undefined;
  }
}

/** The schedules of this process: read from the file once, added to as kernels are tuned. */
export class TuneCache {
  private entries: Map<string, TunedEntry> | undefined;

  constructor(private readonly machine: () => string) {}

  private path(): string | undefined {
    const dir = cacheDir();
    return dir === undefined ? undefined : platform.join(dir, TUNE_CACHE_FILE);
  }

  private load(): Map<string, TunedEntry> {
    if (this.entries !== undefined) return this.entries;
    const path = this.path();
    const file = path === undefined ? undefined : readFile(path);
    tuneCacheStats.loads++;
    this.entries = new Map(Object.entries(file?.machines[this.machine()] ?? {}));
    return this.entries;
  }

  /** The stored schedule of kernel `key` on this machine. */
  get(key: string): TunedEntry | undefined {
    const e = this.load().get(key);
    if (e !== undefined) tuneCacheStats.hits++;
    return e;
  }

  /** Stores the schedule of kernel `key`, in memory and on disk (where there is a cache folder; an unwritable one is not an error). */
  set(key: string, entry: TunedEntry): void {
    this.load().set(key, entry);
    const path = this.path();
    const f = fs();
    if (path === undefined || f === undefined) return;
    const file = readFile(path) ?? { format: FORMAT, machines: {} };
    const machine = this.machine();
    file.machines[machine] = { ...file.machines[machine], [key]: entry };
    const tmp = `${path}.${process.pid}.${Math.random().toString(36).slice(2)}.tmp`;
    try {
      f.mkdirSync(platform.dirname(path), { recursive: true });
      f.writeFileSync(tmp, JSON.stringify(file, null, 1));
      f.renameSync(tmp, path);
      tuneCacheStats.writes++;
    } catch {
      try {
        f.rmSync(tmp, { force: true });
      } catch {
        /* nothing was written */
      }
    }
  }

  /** Forgets what was read, so that the next lookup reads the file again (what a new process does). */
  forget(): void {
    this.entries = undefined;
  }
}
