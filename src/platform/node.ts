// The Node host (see types.ts): files, environment variables, stderr and require.
import * as fs from 'node:fs';
import { createRequire } from 'node:module';
import * as os from 'node:os';
import * as path from 'node:path';
import { Worker } from 'node:worker_threads';
import { type CacheFiles, type ConfigRead, type Platform, environmentOverrides, providedModules } from './types.js';

const nodeRequire = createRequire(import.meta.url);

function specialKind(st: fs.Stats): string {
  if (st.isFIFO()) return 'a FIFO';
  if (st.isDirectory()) return 'a directory';
  if (st.isSocket()) return 'a socket';
  if (st.isCharacterDevice() || st.isBlockDevice()) return 'a device';
  return 'not a regular file';
}

function errorCode(e: unknown): string | undefined {
  return typeof e === 'object' && e !== null && 'code' in e && typeof e.code === 'string' ? e.code : undefined;
}

export const platform: Platform = {
  name: 'node',
  runtime: `node ${process.version}`,
  env: (name) => (environmentOverrides.has(name) ? environmentOverrides.get(name) : process.env[name]),
  environment: () =>
    environmentOverrides.size === 0 ? process.env : { ...process.env, ...Object.fromEntries(environmentOverrides) },
  kerasConfigPath(env, home) {
    const kerasHome = env['KERAS_HOME'];
    const dir = kerasHome !== undefined && kerasHome !== '' ? kerasHome : path.join(home ?? os.homedir(), '.keras');
    return path.join(dir, 'keras.json');
  },
  readConfig(file): ConfigRead {
    let fd: number;
    try {
      // Opened without blocking: a FIFO must not hang the first K call, nor a device be read forever.
      fd = fs.openSync(file, fs.constants.O_RDONLY | (fs.constants.O_NONBLOCK ?? 0));
    } catch (e) {
      const code = errorCode(e);
      if (code === 'ENOENT' || code === 'ENOTDIR') return { kind: 'missing' };
      throw e;
    }
    try {
      const st = fs.fstatSync(fd);
      if (!st.isFile()) return { kind: 'special', what: specialKind(st) };
      return { kind: 'text', text: fs.readFileSync(fd, 'utf8') };
    } finally {
      fs.closeSync(fd);
    }
  },
  writeConfigDefaults(file, text) {
    try {
      fs.mkdirSync(path.dirname(file), { recursive: true });
      // 'wx': never clobber a file another process wrote in the meantime.
      fs.writeFileSync(file, text, { flag: 'wx' });
    } catch {
      // As in Keras: an unwritable config folder is not an error; defaults apply.
    }
  },
  writeStderr: (text) => {
    process.stderr.write(text);
  },
  requireModule(id, from) {
    if (providedModules.has(id)) return providedModules.get(id);
    return (from === undefined ? nodeRequire : createRequire(from))(id);
  },
  async importModule(id) {
    if (providedModules.has(id)) return providedModules.get(id);
    const specifier: string = id;
    return import(specifier);
  },
  installHint: (id) => `install it with \`npm install ${id}\``,
  resolveModule: (id) => nodeRequire.resolve(id),
  nodeBuiltin: (name) => nodeRequire(`node:${name}`),
  cores: () => (typeof os.availableParallelism === 'function' ? os.availableParallelism() : os.cpus().length),
  startWorker(source, workerData) {
    const w = new Worker(source, { eval: true, workerData });
    w.unref(); // an idle pool never keeps the process alive
    return {
      postMessage: (m) => w.postMessage(m),
      onError: (l) => {
        w.on('error', l);
      },
    };
  },
  cacheFiles: (dir) => nodeCacheFiles(dir),
  readFile: (p) => fs.readFileSync(p),
  writeFile: (p, data) => {
    fs.writeFileSync(p, data);
  },
  join: (...parts) => path.join(...parts),
  dirname: (p) => path.dirname(p),
  basename: (p) => path.basename(p),
  base64: (bytes) => Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64'),
  withoutNewProcessHandlers(fn) {
    const events = ['uncaughtException', 'unhandledRejection'] as const;
    const before = events.map((ev) => process.listeners(ev as 'uncaughtException') as unknown[]);
    try {
      return fn();
    } finally {
      events.forEach((ev, i) => {
        for (const l of process.listeners(ev as 'uncaughtException'))
          if (!before[i]!.includes(l)) process.removeListener(ev, l);
      });
    }
  },
  divertStderr(take, fn) {
    const stderr = process.stderr;
    const write = stderr.write;
    stderr.write = ((chunk: string | Uint8Array, ...rest: unknown[]) => {
      const text = typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString('utf8');
      if (take(text)) return true;
      return (write as (...a: unknown[]) => boolean).call(stderr, chunk, ...rest);
    }) as typeof stderr.write;
    try {
      return fn();
    } finally {
      stderr.write = write;
    }
  },
};

let packageVersion: string | undefined;

/** The compile cache's folder: each file written to a temporary name of this process's, then renamed (atomic on one file system). */
function nodeCacheFiles(dir: string): CacheFiles {
  const at = (name: string) => path.join(dir, name);
  let tmp = 0;
  return {
    get version() {
      return (packageVersion ??= (
        JSON.parse(fs.readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }
      ).version);
    },
    read(name) {
      try {
        return fs.readFileSync(at(name));
      } catch {
        return undefined;
      }
    },
    write(name, data) {
      fs.mkdirSync(dir, { recursive: true });
      const t = at(`.${name}.${process.pid}.${tmp++}.tmp`);
      try {
        fs.writeFileSync(t, data);
        fs.renameSync(t, at(name));
      } catch (e) {
        try {
          fs.unlinkSync(t);
        } catch {
          /* never written */
        }
        throw e;
      }
    },
    list() {
      let names: string[];
      try {
        names = fs.readdirSync(dir);
      } catch {
        return [];
      }
      return names.flatMap((name) => {
        if (name.startsWith('.')) return [];
        try {
          const st = fs.statSync(at(name));
          return st.isFile() ? [{ name, size: st.size, used: st.mtimeMs }] : [];
        } catch {
          return [];
        } // removed by another process meanwhile
      });
    },
    remove(name) {
      try {
        fs.unlinkSync(at(name));
      } catch {
        /* already gone */
      }
    },
    touch(name) {
      const now = new Date();
      try {
        fs.utimesSync(at(name), now, now);
      } catch {
        /* already gone */
      }
    },
  };
}
