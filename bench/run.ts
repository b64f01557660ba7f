// npm run bench: theanine (cpu) against TensorFlow.js (cpu backend) and TensorFlow.js WebAssembly,
// in one process, with the same K graphs on theanine's tensorflow backend (the optimized graph
// run op by op on TensorFlow.js, see src/runtime/tfjs) and on the gpu device (`device: 'gpu'`;
// BENCH_GPU=0 leaves it out: on Mesa's software GL it measures correctness more than speed) as
// columns of their own, and on the onnx backend (ONNX Runtime's CPU provider in a worker thread,
// src/runtime/onnx; left out when onnxruntime-node is not installed). Rounds alternate between the implementations (so machine noise hits all of them),
// and each figure is the median of the rounds. Writes bench/results.json; bench/README.md keeps the
// latest figures. `npm run bench -- <filter>` runs only the cases whose name contains <filter> (or any of
// several alternatives separated by `|`); BENCH_COMPILE_ONLY=1 measures only their compile times.
import * as fs from 'node:fs';
import * as os from 'node:os';
import { createRequire } from 'node:module';
import * as path from 'node:path';
import * as tf from '@tensorflow/tfjs';
import { setWasmPaths } from '@tensorflow/tfjs-backend-wasm';
import { backend as K, set_backend } from '../src/index.js';
import { tfjsRuntime } from '../src/runtime/tfjs/load.js';
import { ortAvailable, pingMs } from '../src/runtime/onnx/session.js';
import { clearCompileCache, compileTimes } from '../src/runtime/cpu/compile.js';
import { clearKernelCaches } from '../src/codegen/cpu/module.js';
import { set_device } from '../src/api/config.js';
import { loadGpuJs } from '../src/runtime/gpu/gpujs.js';
import { gpuDevice } from '../src/runtime/gpu/device.js';
import { cases, type Impl, type ImplName } from './cases.js';
import { measurePeak } from '../src/codegen/cpu/wasm/peak.js';
import { hasRelaxedSimd } from '../src/codegen/cpu/wasm/encode.js';
import { threadCount } from '../src/codegen/cpu/threads.js';
import { matmulFma, matmulPrecision } from '../src/codegen/cpu/wasm-kernel.js';

const ROUNDS = Number(process.env['BENCH_ROUNDS'] ?? 9);
/**
 * BENCH_CLOCK=cpu: each call's process CPU time (process.cpuUsage: every thread of the process)
 * instead of its wall time. On a machine shared with other jobs, with THEANINE_THREADS=1 (tfjs-wasm
 * runs one thread in Node), it compares the work each implementation does, whatever the scheduler
 * does to its latency; with more threads it counts the workers' time too (work, not latency).
 */
const CPU_CLOCK = process.env['BENCH_CLOCK'] === 'cpu';
const clock = (): number => {
  if (!CPU_CLOCK) return performance.now();
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};
/** `npm run bench -- 'MLP|LSTM Keras-style Scan'`: cases whose name contains any of the alternatives. */
const filters = (process.argv[2] ?? '').split('|');
const picked = (name: string) => filters.some((f) => name.includes(f));
/** BENCH_IMPLS=theanine,tfjs-wasm: only these implementations (default: all); theanine is always measured. */
const IMPLS = process.env['BENCH_IMPLS']?.split(',');
/** BENCH_COMPILE_ONLY=1: only the compile times (and their phases) of the picked cases. */
const COMPILE_ONLY = process.env['BENCH_COMPILE_ONLY'] === '1';

/** The gpu column: theanine's own impl, its K.function built with the gpu device. */
const GPU = process.env['BENCH_GPU'] !== '0' && !(loadGpuJs() instanceof Error);
async function onGpu(make: () => Promise<Impl>): Promise<Impl> {
  set_device('gpu');
  try {
    return await make();
  } finally {
    set_device('cpu');
  }
}

async function useBackend(name: ImplName): Promise<void> {
  if (name === 'theanine' || name === 'theanine-gpu' || name === 'onnx') return;
  // The tensorflow backend switches to its own tfjs backend when another is active; it is made
  // the active one here, so the column does not pay for switching back and forth.
  const want = name === 'tfjs-cpu' ? 'cpu' : name === 'tensorflow' ? tfjsRuntime().backendName : 'wasm';
  if (tf.getBackend() !== want) await tf.setBackend(want);
}

/**
 * ONNX Runtime's intra-op threads keep spinning for a while after each of its runs (measured here:
 * both cores busy for 5-10 ms on a quiet machine, 30-40 ms at a fraction of the cores under load),
 * so whatever runs next shares the cores with them; in the rotation of the rounds that is always
 * the theanine column, whose worker threads then wait for a core. After each onnx call (untimed)
 * the bench waits until they stop: 5 ms slices of sleep until one costs the process under 5% of a
 * core (at most 200 ms).
 */
const idle = new Int32Array(new SharedArrayBuffer(4));
function settleOnnx(): void {
  const cpuMs = () => { const u = process.cpuUsage(); return (u.user + u.system) / 1000; };
  for (let waited = 0; waited < 200; waited += 5) {
    const c0 = cpuMs();
    Atomics.wait(idle, 0, 0, 5);
    if (cpuMs() - c0 < 0.25) return;
  }
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 === 1 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

let overhead: { roundTripMs: number; tinyCallOnnxMs: number; tinyCallTheanineMs: number } | undefined;

async function main(): Promise<void> {
  const require = createRequire(import.meta.url);
  setWasmPaths(path.dirname(require.resolve('@tensorflow/tfjs-backend-wasm/package.json')) + '/dist/');
  await tf.setBackend('wasm');
  await tf.ready();
  const wasmSimd = tf.env().getBool('WASM_HAS_SIMD_SUPPORT');
  const results: Record<string, unknown>[] = [];
  const print = (s: string) => process.stdout.write(s + '\n');
  print(`theanine bench: ${os.cpus()[0]?.model ?? 'cpu'} x${os.cpus().length}, node ${process.version}, ${ROUNDS} rounds, tfjs-wasm simd=${wasmSimd}, theanine threads ${threadCount()} (THEANINE_THREADS), load average ${os.loadavg()[0]!.toFixed(1)}${CPU_CLOCK ? ', clock: process CPU time (BENCH_CLOCK=cpu)' : ''}`);
  // The limit: one core's WebAssembly SIMD multiply-add rate (src/codegen/cpu/wasm/peak.ts). theanine's
  // float32 products sum in float32 (f32x4, fused where the runtime has relaxed SIMD) under matmul
  // precision "float32", in float64 (f64x2, equal to the reference's) under "float64"; XNNPACK sums in float32 (f32x4).
  const peak = measurePeak(hasRelaxedSimd(), clock);
  const precision = matmulPrecision();
  const ownPeak = peak === undefined ? undefined : precision === 'float64' ? peak.f64x2 : matmulFma() ? peak.f32x4Fused : peak.f32x4;
  const ownPeakName = precision === 'float64' ? 'f64x2' : matmulFma() ? 'f32x4 relaxed FMA' : 'f32x4';
  if (peak !== undefined) {
    print(`measured peak (one core, WebAssembly SIMD multiply-add loop): f64x2 ${peak.f64x2.toFixed(1)} GFLOP/s, f32x4 ${peak.f32x4.toFixed(1)} GFLOP/s${peak.f32x4Fused !== undefined ? `, f32x4 relaxed FMA ${peak.f32x4Fused.toFixed(1)} GFLOP/s` : ', no relaxed SIMD in this runtime'}`);
    print(`GFLOP/s columns: theanine (matmul precision "${precision}") as a fraction of the ${ownPeakName} peak, tfjs-wasm of the f32x4 peak`);
  }
  const gpuName = GPU ? gpuDevice().description : undefined;
  if (gpuName !== undefined) print(`gpu column: ${gpuName}`);
  print('');
  print(`tensorflow backend: tfjs ${tfjsRuntime().flavour}`);
  // With BENCH_CLOCK=cpu no onnx column: ONNX Runtime's worker threads keep spinning between its
  // runs, and process CPU time would count them against every column.
  const ONNX = !CPU_CLOCK && ortAvailable() === undefined;
  if (CPU_CLOCK) print('onnx backend: left out (BENCH_CLOCK=cpu)');
  else if (ONNX) {
    // the synchronous bridge: one request to the ORT worker and back, with nothing to run (medians of 5 x 200)
    const pings = Array.from({ length: 5 }, () => pingMs(200));
    // a whole call of the smallest function (x + 1 on 4 floats): conversion, the round trip and ORT's own run
    const x = K.placeholder([4], null, 'float32', false, 'x');
    const callMs = (backend: 'theanine' | 'onnx') => {
      const f = K.function([x], [K.add(x, 1)], [], { backend });
      const v = [[1, 2, 3, 4]];
      for (let i = 0; i < 20; i++) f(v);
      return median(Array.from({ length: 5 }, () => {
        const t0 = performance.now();
        for (let i = 0; i < 200; i++) f(v);
        return (performance.now() - t0) / 200;
      }));
    };
    overhead = { roundTripMs: median(pings), tinyCallOnnxMs: callMs('onnx'), tinyCallTheanineMs: callMs('theanine') };
    print(`onnx backend: ONNX Runtime cpu provider in a worker; Atomics.wait round trip ${(overhead.roundTripMs * 1000).toFixed(0)} us; a call of x + 1 (4 floats): onnx ${(overhead.tinyCallOnnxMs * 1000).toFixed(0)} us, theanine ${(overhead.tinyCallTheanineMs * 1000).toFixed(0)} us`);
  } else print(`onnx column not run: ${ortAvailable()}`);
  print(`${'case'.padEnd(34)} ${'theanine'.padStart(12)} ${'tensorflow'.padStart(12)} ${'onnx'.padStart(12)} ${'gpu'.padStart(12)} ${'tfjs-cpu'.padStart(12)} ${'tfjs-wasm'.padStart(12)} ${'vs tf'.padStart(8)} ${'vs onnx'.padStart(8)} ${'vs cpu'.padStart(8)} ${'vs wasm'.padStart(8)}`);

  for (const c of cases()) {
    if (!picked(c.name) || COMPILE_ONLY) continue;
    if (c.skip !== undefined) {
      print(`${c.name.padEnd(34)} ${'skipped: ' + c.skip}`);
      results.push({ name: c.name, skipped: c.skip });
      continue;
    }
    const impls: [ImplName, Impl][] = [];
    const theanine = c.impls.theanine;
    // The theanine impl's K.function calls, compiled while the tensorflow backend is selected.
    const withTf = theanine === undefined ? {} : {
      tensorflow: async () => {
        set_backend('tensorflow');
        try { return await theanine(); } finally { set_backend('theanine'); }
      },
      ...(ONNX && c.noOnnx === undefined ? {
        onnx: async () => {
          set_backend('onnx');
          try { return await theanine(); } finally { set_backend('theanine'); }
        },
      } : {}),
    };
    for (const [name, make] of Object.entries({ ...c.impls, ...withTf }) as [ImplName, () => Promise<Impl>][]) {
      if (IMPLS !== undefined && name !== 'theanine' && !IMPLS.includes(name)) continue;
      await useBackend(name);
      impls.push([name, await make()]);
      if (name === 'theanine' && GPU) impls.push(['theanine-gpu', await onGpu(make)]);
    }
    const times = new Map<ImplName, number[]>(impls.map(([n]) => [n, []]));
    // The earlier cases' garbage collected first (with --expose-gc), so that freeing it does not
    // land in this case's rounds (the 16 MB results of the softmax rows, the training steps' arrays).
    (globalThis as { gc?: () => void }).gc?.();
    // Warm-up: at least 2 calls and 300 ms, for every implementation alike (V8 optimises generated
    // code and tfjs its kernels over the first calls, and WebAssembly tiers up from its baseline
    // compiler in the background: a compiled theanine step takes 2-4x its settled time in its
    // first five calls, and 10 calls of a 0.03 ms inference end before tier-up).
    for (const [name, impl] of impls) {
      await useBackend(name);
      const t0 = performance.now();
      for (let w = 0; w < 2 || performance.now() - t0 < 300; w++) { impl.run(); if (name === 'onnx') settleOnnx(); }
    }
    for (let r = 0; r < ROUNDS; r++) {
      for (let k = 0; k < impls.length; k++) {
        const [name, impl] = impls[(k + r) % impls.length]!;
        await useBackend(name);
        const t0 = clock();
        impl.run();
        times.get(name)!.push(clock() - t0);
        if (name === 'onnx') settleOnnx();
      }
    }
    for (const [, impl] of impls) impl.dispose?.();
    const med = new Map([...times].map(([n, ts]) => [n, median(ts)]));
    const fmt = (n: ImplName) => {
      const ms = med.get(n);
      if (ms === undefined) return '-'.padStart(12);
      return (c.flops !== undefined ? `${(c.flops / ms / 1e6).toFixed(2)} GF/s` : `${ms.toFixed(2)} ms`).padStart(12);
    };
    // the fraction of the peak of the threads it may use (one core's peak times the threads)
    const ofPeak = (n: ImplName, p: number | undefined, threads = 1) => {
      const ms = med.get(n);
      return ms === undefined || p === undefined || c.flops === undefined ? '' : ` ${(100 * c.flops / ms / 1e6 / (p * threads)).toFixed(0)}%${threads > 1 ? ` of ${threads} cores` : ''}`;
    };
    const th = med.get('theanine')!;
    const ratio = (n: ImplName) => (med.has(n) ? `${(med.get(n)! / th).toFixed(2)}x` : '-').padStart(8);
    const peaks = c.flops === undefined || peak === undefined ? '' : `  peak: theanine${ofPeak('theanine', ownPeak, threadCount())}, tfjs-wasm${ofPeak('tfjs-wasm', peak.f32x4)}`;
    print(`${c.name.padEnd(34)} ${fmt('theanine')} ${fmt('tensorflow')} ${fmt('onnx')} ${fmt('theanine-gpu')} ${fmt('tfjs-cpu')} ${fmt('tfjs-wasm')} ${ratio('tensorflow')} ${ratio('onnx')} ${ratio('tfjs-cpu')} ${ratio('tfjs-wasm')}${peaks}${c.note !== undefined ? `  (${c.note})` : ''}`);
    results.push({
      name: c.name, note: c.note, medianMs: Object.fromEntries(med), flops: c.flops,
      gflops: c.flops === undefined ? undefined : Object.fromEntries([...med].map(([n, ms]) => [n, c.flops! / ms / 1e6])),
      speedupVsTensorflowBackend: med.has('tensorflow') ? med.get('tensorflow')! / th : undefined,
      speedupVsOnnxBackend: med.has('onnx') ? med.get('onnx')! / th : undefined,
      speedupVsCpu: med.has('tfjs-cpu') ? med.get('tfjs-cpu')! / th : undefined,
      speedupVsWasm: med.has('tfjs-wasm') ? med.get('tfjs-wasm')! / th : undefined,
    });
  }

  // Compile times, medians of 5 rounds, each from empty caches (programs, kernels, drivers), in wall
  // time and in CPU time of this process (all its threads: V8 compiles in the background too;
  // on a machine shared with other jobs, CPU time is the steadier figure):
  // cold = build the graph (with its data) + K.function + first call; warm = the same after
  // clearing only the program cache (kernel functions already compiled by V8: a rebuilt model);
  // hit = K.function again on the graph just compiled (the structural cache).
  print('');
  print(`${'compile: build + K.function + first call'.padEnd(44)} ${'cold'.padStart(10)} ${'(cpu)'.padStart(9)} ${'warm kern.'.padStart(11)} ${'cache hit'.padStart(11)}  phases of the cold compile (ms; medians)`);
  const cpuMs = () => { const u = process.cpuUsage(); return (u.user + u.system) / 1000; };
  const compile: Record<string, unknown>[] = [];
  for (const c of cases()) {
    if (c.compile === undefined || !picked(c.name) || c.skip !== undefined) continue;
    const colds: number[] = [];
    const coldCpu: number[] = [];
    const warms: number[] = [];
    const hits: number[] = [];
    const phases: (typeof compileTimes & { graph: number })[] = [];
    for (let r = 0; r < 5; r++) {
      K.clear_session();
      clearCompileCache();
      clearKernelCaches();
      let t0 = performance.now();
      const c0 = cpuMs();
      const g = c.compile();
      const built = performance.now();
      g.firstCall();
      colds.push(performance.now() - t0);
      coldCpu.push(cpuMs() - c0);
      // graph: building it (gradients included) and K.function's own work besides the passes
      phases.push({ ...compileTimes, graph: built - t0 - compileTimes.passes });
      clearCompileCache();
      t0 = performance.now();
      const g2 = c.compile();
      g2.firstCall();
      warms.push(performance.now() - t0);
      t0 = performance.now();
      g2.recompile();
      hits.push(performance.now() - t0);
    }
    const ph = (k: keyof (typeof phases)[number]) => median(phases.map((p) => p[k]));
    const phasesMs = {
      graph: ph('graph'), passes: ph('passes'), bodyPasses: ph('bodyPasses'), lower: ph('lower'), plan: ph('plan'), render: ph('render'), firstRun: ph('firstRun'),
    };
    const row = { name: c.name, coldMs: median(colds), coldCpuMs: median(coldCpu), warmKernelsMs: median(warms), cacheHitMs: median(hits), phasesMs };
    compile.push(row);
    const f = (x: number) => x.toFixed(1);
    print(`${c.name.padEnd(44)} ${`${row.coldMs.toFixed(1)} ms`.padStart(10)} ${`${row.coldCpuMs.toFixed(1)}`.padStart(9)} ${`${row.warmKernelsMs.toFixed(1)} ms`.padStart(11)} ${`${row.cacheHitMs.toFixed(3)} ms`.padStart(11)}  graph ${f(phasesMs.graph)}, passes ${f(phasesMs.passes)}, scan bodies' passes ${f(phasesMs.bodyPasses)}, lower ${f(phasesMs.lower)}, plan ${f(phasesMs.plan)}, render ${f(phasesMs.render)}, first run ${f(phasesMs.firstRun)}`);
  }

  // Heap growth over 1000 calls of the training step.
  let heap: Record<string, unknown> | undefined;
  const gc = (globalThis as { gc?: () => void }).gc;
  const train = cases().find((c) => c.heap !== undefined && c.skip === undefined);
  if (train !== undefined && picked(train.name) && !COMPILE_ONLY) {
    const step = train.heap!();
    for (let i = 0; i < 50; i++) step();
    gc?.();
    const before = process.memoryUsage().heapUsed;
    for (let i = 0; i < 1000; i++) step();
    gc?.();
    const after = process.memoryUsage().heapUsed;
    heap = { case: train.name, calls: 1000, growthBytes: after - before, gcExposed: gc !== undefined };
    print('');
    print(`heap growth over 1000 calls of ${train.name}: ${((after - before) / 1024).toFixed(1)} KiB${gc === undefined ? ' (run with --expose-gc for a meaningful figure)' : ''}`);
  }

  const out = {
    machine: { cpu: os.cpus()[0]?.model, cores: os.cpus().length, node: process.version, platform: `${os.platform()} ${os.arch()}`, wasmSimd, gpu: gpuName, peakGflops: peak, matmulPrecision: precision, threads: threadCount(), clock: CPU_CLOCK ? 'cpu' : 'wall', loadAverage: os.loadavg() },
    date: new Date().toISOString(), rounds: ROUNDS, cases: results, compile, heap, onnxOverhead: overhead,
  };
  fs.writeFileSync(new URL('./results.json', import.meta.url), JSON.stringify(out, null, 2) + '\n');
}

await main();
