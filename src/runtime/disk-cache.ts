// The compile cache on disk: entries (JSON) by key, in the folder THEANINE_CACHE_DIR or keras.json
// "cache_dir" names; off when neither is set, and always off in a browser (src/platform: no file
// system). JAX's persistent compilation cache is the anchor: a file per key in one folder, the
// key hashed into its name, written whole under a temporary name and renamed (other processes see
// the old file or the new one), and a file that does not check out (another version, another key,
// a damaged body) is discarded and the entry compiled again. The folder is bounded in bytes: past
// the bound, the files used least recently go (a hit marks its file used).
//
// A file: one header line of JSON (format, theanine's version, the whole key, the body's hash and
// length), then the body (JSON).
import { platform } from '#platform';
import type { CacheFiles } from '../platform/types.js';
import { debugEnabled } from './debug.js';
import { debugSink } from './target.js';

/** The most bytes the folder's files take together, unless THEANINE_CACHE_MAX_BYTES or setDiskCacheMaxBytes says otherwise. */
export const DEFAULT_CACHE_MAX_BYTES = 256 * 2 ** 20;
const FORMAT = 'theanine-compile-cache/1';

/** Entries found, missed (absent or discarded), written; files discarded (failed their checks) and evicted (the bound). Tests read them. */
export const diskCacheStats = { hits: 0, misses: 0, writes: 0, discarded: 0, evicted: 0 };

/** keras.json "cache_dir" (src/api/config.ts registers its reader; the runtime does not import the API). */
let configured: () => string | undefined = () => undefined;
export function setConfiguredCacheDir(read: () => string | undefined): void {
  configured = read;
}

/** A folder set in this process (null: off), over THEANINE_CACHE_DIR and keras.json. */
let override: string | null | undefined;
/** Sets the cache folder for this process (null: off; undefined: back to THEANINE_CACHE_DIR, then keras.json "cache_dir"). */
export function setDiskCacheDir(dir: string | null | undefined): void {
  override = dir;
}

let maxOverride: number | undefined;
/** Sets the folder's bound in bytes for this process (undefined: THEANINE_CACHE_MAX_BYTES, else DEFAULT_CACHE_MAX_BYTES). */
export function setDiskCacheMaxBytes(n: number | undefined): void {
  if (n !== undefined && !(Number.isInteger(n) && n >= 0))
    throw new RangeError(`setDiskCacheMaxBytes: argument n is ${n}; allowed: a non-negative integer, or undefined`);
  maxOverride = n;
}

function maxBytes(): number {
  if (maxOverride !== undefined) return maxOverride;
  const v = platform.env('THEANINE_CACHE_MAX_BYTES');
  if (v === undefined || v === '') return DEFAULT_CACHE_MAX_BYTES;
  if (!/^[0-9]+$/.test(v))
    throw new RangeError(`THEANINE_CACHE_MAX_BYTES is ${JSON.stringify(v)}; allowed: a non-negative integer (bytes)`);
  return Number(v);
}

/** The folder in use, or undefined when the cache is off. */
export function diskCacheDir(): string | undefined {
  if (override !== undefined) return override ?? undefined;
  const env = platform.env('THEANINE_CACHE_DIR');
  if (env !== undefined && env !== '') return env;
  const c = configured();
  return c === undefined || c === '' ? undefined : c;
}

let opened: { readonly dir: string; readonly files: CacheFiles | undefined } | undefined;
function folder(): CacheFiles | undefined {
  const dir = diskCacheDir();
  if (dir === undefined) return undefined;
  if (opened?.dir !== dir) opened = { dir, files: platform.cacheFiles(dir) };
  return opened.files;
}

/** Whether the compile cache on disk is on (a folder is set and the platform has files). */
export function diskCacheOn(): boolean {
  return folder() !== undefined;
}

function debug(line: string): void {
  if (debugEnabled('cache')) debugSink(`[theanine cache] ${line}\n`);
}

/** FNV-1a over UTF-16 code units, twice with different seeds: 64 bits as 16 hex digits. */
export function hash64(text: string): string {
  let a = 0x811c9dc5;
  let b = 0x9747b28c;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    a = Math.imul(a ^ c, 0x01000193);
    b = Math.imul(b ^ c, 0x01000193) ^ (b >>> 15);
  }
  return (a >>> 0).toString(16).padStart(8, '0') + (b >>> 0).toString(16).padStart(8, '0');
}

const fileName = (key: string): string => `${hash64(key)}.json`;

/** Why a file's text is not the entry of `key` (undefined: it is), and its body. */
function check(text: string, key: string, version: string): { why: string } | { body: string } {
  const nl = text.indexOf('\n');
  if (nl < 0) return { why: 'no header line' };
  let h: Record<string, unknown>;
  try {
    h = JSON.parse(text.slice(0, nl)) as Record<string, unknown>;
  } catch {
    return { why: 'the header is not JSON' };
  }
  if (h === null || typeof h !== 'object' || h['format'] !== FORMAT) return { why: `not a ${FORMAT} file` };
  if (h['version'] !== version)
    return { why: `written by theanine ${JSON.stringify(h['version'])}, this is ${version}` };
  if (h['key'] !== key) return { why: 'another key (its hash collides)' };
  const body = text.slice(nl + 1);
  if (h['length'] !== body.length || h['hash'] !== hash64(body))
    return { why: 'the body is damaged (length or hash differs)' };
  return { body };
}

/** The entry stored under `key`, parsed (through `reviver`), or undefined (counted as a miss; a file that fails its checks is discarded). */
export function readEntry(key: string, reviver?: (key: string, value: unknown) => unknown): unknown {
  const files = folder();
  if (files === undefined) return undefined;
  const name = fileName(key);
  const bytes = files.read(name);
  if (bytes === undefined) {
    diskCacheStats.misses++;
    debug(`miss ${name}`);
    return undefined;
  }
  const r = check(new TextDecoder().decode(bytes), key, files.version);
  let body: unknown;
  if ('body' in r) {
    try {
      body = JSON.parse(r.body, reviver);
    } catch {
      body = undefined;
    }
  }
  if (body === undefined) {
    discardEntry(key, 'why' in r ? r.why : 'the body is not JSON');
    return undefined;
  }
  files.touch(name);
  diskCacheStats.hits++;
  debug(`hit ${name}`);
  return body;
}

/** Removes the file of `key` (it failed a check: `why`), counted as discarded and missed; the caller compiles again. */
export function discardEntry(key: string, why: string): void {
  const files = folder();
  if (files === undefined) return;
  const name = fileName(key);
  files.remove(name);
  diskCacheStats.discarded++;
  diskCacheStats.misses++;
  debug(`discarded ${name} in ${diskCacheDir()}: ${why}; compiling again`);
}

/** Stores `body` (JSON, through `replacer`) under `key`, then evicts the least recently used files past the bound. A file system error is a debug line, never the caller's. */
export function writeEntry(key: string, body: unknown, replacer?: (key: string, value: unknown) => unknown): void {
  const files = folder();
  if (files === undefined) return;
  const text = JSON.stringify(body, replacer);
  const header = JSON.stringify({
    format: FORMAT,
    version: files.version,
    key,
    hash: hash64(text),
    length: text.length,
  });
  const name = fileName(key);
  try {
    files.write(name, new TextEncoder().encode(`${header}\n${text}`));
    diskCacheStats.writes++;
    debug(`wrote ${name} (${header.length + 1 + text.length} characters)`);
    evict(files);
  } catch (e) {
    debug(`cannot write ${name} in ${diskCacheDir()}: ${e instanceof Error ? e.message : String(e)}`);
  }
}

/** Removes the least recently used files until the folder's files take at most the bound. */
function evict(files: CacheFiles): void {
  const bound = maxBytes();
  const all = files.list().filter((f) => f.name.endsWith('.json'));
  let total = all.reduce((a, f) => a + f.size, 0);
  if (total <= bound) return;
  all.sort((x, y) => x.used - y.used);
  for (const f of all) {
    if (total <= bound) break;
    files.remove(f.name);
    total -= f.size;
    diskCacheStats.evicted++;
    debug(`evicted ${f.name} (${f.size} bytes; the folder holds at most ${bound})`);
  }
}
