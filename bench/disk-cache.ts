// The compile cache on disk (docs/debugging.md): the Keras-style LSTM (bench/cases.ts, one Scan,
// fwd + bwd + SGD, batch 64, T 28, 28 -> 128) compiled and called once in fresh processes:
//   cold          no cache (THEANINE_CACHE_DIR unset)
//   cold + write  an empty cache folder: compiled, then stored
//   from disk     the folder a previous process filled: loaded, bound, called
// Each figure is K.function + the first call in a child process (imports and graph building
// excluded), the median of BENCH_ROUNDS rounds (default 7), the three kinds in an order that
// rotates per round.
//   npx tsx bench/disk-cache.ts
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';

interface ChildResult {
  readonly ms: number;
  /** CPU time of the process's threads (the calling thread, the workers, V8's compiler threads) over the same span. */
  readonly cpuMs: number;
  readonly loss: number;
  readonly hits: number;
  readonly phases: Record<string, number>;
}

async function child(): Promise<void> {
  const { backend: K } = await import('../src/index.js');
  const { kerasLstmGraph, nd, KB, KT, KI, KU } = await import('./cases.js');
  const { compileTimes } = await import('../src/runtime/cpu/compile.js');
  const { diskCacheStats } = await import('../src/runtime/disk-cache.js');
  const { x, y, loss, updates } = kerasLstmGraph(false);
  const xs = [nd([KB, KT, KI], 33), nd([KB, KU], 34, -0.5, 0.5)];
  const cpu = () => { const u = process.cpuUsage(); return (u.user + u.system) / 1000; };
  const c0 = cpu();
  const t0 = performance.now();
  const f = K.function([x, y], [loss], updates);
  const out = f(xs);
  const ms = performance.now() - t0;
  const r: ChildResult = { ms, cpuMs: cpu() - c0, loss: out[0]!.data[0]!, hits: diskCacheStats.hits, phases: { ...compileTimes } };
  process.stdout.write(`${JSON.stringify(r)}\n`);
}

function run(cacheDir: string | undefined): ChildResult {
  const env: NodeJS.ProcessEnv = { ...process.env, BENCH_DISK_CACHE_CHILD: '1' };
  delete env['THEANINE_CACHE_DIR'];
  if (cacheDir !== undefined) env['THEANINE_CACHE_DIR'] = cacheDir;
  const r = spawnSync(process.execPath, ['--import', 'tsx', fileURLToPath(import.meta.url)], { env, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`child failed (${r.status}): ${r.stderr}`);
  return JSON.parse(r.stdout.trim().split('\n').pop()!) as ChildResult;
}

const median = (a: readonly number[]) => [...a].sort((p, q) => p - q)[a.length >> 1]!;

function main(): void {
  const rounds = Number(process.env['BENCH_ROUNDS'] ?? 7);
  const kinds = { cold: [] as ChildResult[], 'cold + write': [] as ChildResult[], 'from disk': [] as ChildResult[] };
  for (let i = 0; i < rounds; i++) {
    const filled = fs.mkdtempSync(path.join(os.tmpdir(), 'theanine-bench-cache-'));
    const empty = fs.mkdtempSync(path.join(os.tmpdir(), 'theanine-bench-cache-'));
    try {
      run(filled); // fills the cache the "from disk" process reads (not counted)
      // the order rotates per round, so that no kind always runs first on a machine whose load changes
      const order = [() => kinds.cold.push(run(undefined)), () => kinds['cold + write'].push(run(empty)), () => kinds['from disk'].push(run(filled))];
      for (let j = 0; j < 3; j++) order[(i + j) % 3]!();
    } finally {
      fs.rmSync(filled, { recursive: true, force: true });
      fs.rmSync(empty, { recursive: true, force: true });
    }
  }
  const cold = median(kinds.cold.map((r) => r.ms));
  const load = os.loadavg()[0]!.toFixed(1);
  console.log(`Keras-style LSTM (Scan, fwd+bwd b64 T28 28->128): K.function + first call in a fresh process, median of ${rounds}; ${process.env['THEANINE_THREADS'] ?? os.availableParallelism()} threads; load average ${load} on ${os.availableParallelism()} cores`);
  const compileOf = (r: ChildResult) => ['passes', 'bodyPasses', 'lower', 'plan', 'render'].reduce((a, k) => a + (r.phases[k] ?? 0), 0);
  const coldCompile = median(kinds.cold.map(compileOf));
  const coldCpu = median(kinds.cold.map((r) => r.cpuMs));
  console.log(`  ${''.padEnd(13)} ${'total'.padStart(8)}         ${'CPU'.padStart(8)}         ${'compile'.padStart(8)}  (total: wall time; CPU: all the process's threads; compile: passes + Scan bodies' passes + lowering + plan + code generation, or loading and binding; the rest is the first run)`);
  for (const [name, rs] of Object.entries(kinds)) {
    const ms = median(rs.map((r) => r.ms));
    const cpuMs = median(rs.map((r) => r.cpuMs));
    const c = median(rs.map(compileOf));
    const ph = (k: string) => median(rs.map((r) => r.phases[k] ?? 0)).toFixed(1);
    console.log(`  ${name.padEnd(13)} ${ms.toFixed(1).padStart(8)} ms ${(ms / cold).toFixed(2)}  ${cpuMs.toFixed(1).padStart(8)} ms ${(cpuMs / coldCpu).toFixed(2)}  ${c.toFixed(1).padStart(8)} ms ${(c / coldCompile).toFixed(2)}  (hits ${median(rs.map((r) => r.hits))}; passes ${ph('passes')}, bodies ${ph('bodyPasses')}, lower ${ph('lower')}, plan ${ph('plan')}, generate or load ${ph('render')}, first run ${ph('firstRun')})`);
  }
  const losses = new Set(Object.values(kinds).flatMap((rs) => rs.map((r) => r.loss)));
  console.log(`  loss of the first call: ${[...losses].join(', ')} (${losses.size === 1 ? 'the same in every process' : 'DIFFERS between processes'})`);
}

if (process.env['BENCH_DISK_CACHE_CHILD'] === '1') await child();
else main();
