// The WebGPU side of the gpu device's webgpu mode, as source text run in two places: in Node, in
// a worker thread (WORKER_SOURCE, CommonJS, run with \`eval\`) holding Dawn's device, because
// WebGPU's waits (requestAdapter, mapAsync, pipeline creation) are promises and K.function is
// synchronous: the caller posts a request and blocks in Atomics.wait (session.ts), as the onnx
// backend does with ONNX Runtime; in a browser, on the page's own thread with navigator.gpu
// (page.ts), where only callAsync awaits it. Buffers are the device side's, by number: a request
// allocates, uploads, dispatches a list of compiled kernels and buffer copies in one command
// buffer, reads back, and frees, in that order.

/**
 * \`makeDeviceSide(gpu, collect, noAdapter)\`: \`gpu\` is a GPU object (Dawn's, or navigator.gpu),
 * \`collect\` runs the garbage collector where the host allows it (Dawn's objects give their
 * memory back when collected), \`noAdapter\` the error when requestAdapter finds none. Returns
 * \`handle(req)\`, which resolves to the request's reply (none for a quiet free). One request at
 * a time: the caller queues them.
 */
export const DEVICE_SOURCE = `
function makeDeviceSide(gpu, collect, noAdapter) {
  let device, info;
  const buffers = new Map();
  // Compiled pipelines by key, each with the bind groups made for it, by the ids it binds: a call
  // binds the same buffers every time, so a group is made once (tfjs-backend-webgpu makes one per
  // dispatch). \`bound\`: for each buffer, the groups that bind it, dropped with it.
  const pipelines = new Map();
  const bound = new Map();
  function bindGroup(entry, binds) {
    const k = binds.join(',');
    let g = entry.groups.get(k);
    if (g === undefined) {
      g = device.createBindGroup({ layout: entry.p.getBindGroupLayout(0), entries: binds.map((id, j) => ({ binding: j, resource: { buffer: buffers.get(id) } })) });
      entry.groups.set(k, g);
      for (const id of binds) {
        let on = bound.get(id);
        if (on === undefined) bound.set(id, (on = []));
        on.push([entry.groups, k]);
      }
    }
    return g;
  }
  const counts = { uploads: 0, readbacks: 0, dispatches: 0, copies: 0, submits: 0 };
  // Bytes of the live buffers (the buffers' sizes as allocated).
  let bytes = 0;
  const sizes = new Map();
  function alloc(id, n) {
    drop(id);
    const size = Math.max(4, n);
    buffers.set(id, device.createBuffer({ size, usage: USAGE() }));
    sizes.set(id, size);
    bytes += size;
  }
  function drop(id) {
    // (groups that named the id before it had a buffer go too)
    for (const [groups, k] of bound.get(id) || []) groups.delete(k);
    bound.delete(id);
    const b = buffers.get(id);
    if (!b) return;
    b.destroy();
    buffers.delete(id);
    bytes -= sizes.get(id);
    sizes.delete(id);
  }
  const tally = () => ({ ...counts, buffers: buffers.size, bytes });
  async function init(req) {
    const adapter = await gpu.requestAdapter();
    if (!adapter) return { ok: false, error: noAdapter };
    const want = ['maxStorageBuffersPerShaderStage', 'maxStorageBufferBindingSize', 'maxBufferSize', 'maxComputeWorkgroupStorageSize'];
    const requiredLimits = {};
    for (const k of want) requiredLimits[k] = adapter.limits[k];
    // timestamp queries where the adapter has them (the profiler's kernel times)
    const timestamps = !!(adapter.features && adapter.features.has('timestamp-query'));
    // f16 storage of float16 where the adapter has shader-f16 (unless the request says not)
    const f16 = req.f16 !== false && !!(adapter.features && adapter.features.has('shader-f16'));
    const requiredFeatures = [...(timestamps ? ['timestamp-query'] : []), ...(f16 ? ['shader-f16'] : [])];
    device = await adapter.requestDevice({ requiredLimits, requiredFeatures });
    halfCopy = undefined;
    device.addEventListener && device.addEventListener('uncapturederror', (e) => { lastError = String(e.error && e.error.message || e); });
    const a = adapter.info || {};
    info = { description: [a.vendor, a.architecture, a.device, a.description].filter((s) => s).join(' ') || 'unknown adapter', maxStorageBuffers: adapter.limits.maxStorageBuffersPerShaderStage, maxBufferSize: Math.min(adapter.limits.maxBufferSize, adapter.limits.maxStorageBufferBindingSize), timestamps, f16 };
    return { ok: true, info };
  }
  let lastError;
  const USAGE = () => GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST;
  // An error on a user op's helper line (src/codegen/wgsl/user.ts: one line, \`fn u_<op>_<n>(\`) names the op.
  function userOpAt(code, lineNum) {
    const l = code.split('\\n')[lineNum - 1] || '';
    if (!l.startsWith('fn u_')) return '';
    const name = l.slice(5, l.indexOf('('));
    return 'in the wgsl template of user op ' + name.slice(0, name.lastIndexOf('_')) + ': ';
  }
  async function compile(key, code) {
    if (pipelines.has(key)) return;
    // (a key the main thread believes compiled after a failure is compiled again here)
    device.pushErrorScope('validation');
    const module = device.createShaderModule({ code });
    const ci = await module.getCompilationInfo();
    const errs = ci.messages.filter((m) => m.type === 'error');
    if (errs.length > 0) { await device.popErrorScope(); throw new Error('WGSL did not compile: ' + errs.map((m) => userOpAt(code, m.lineNum) + m.lineNum + ':' + m.linePos + ' ' + m.message).join('; ') + '\\n' + code); }
    const p = await device.createComputePipelineAsync({ layout: 'auto', compute: { module, entryPoint: 'main' } });
    const e = await device.popErrorScope();
    if (e) throw new Error('pipeline: ' + e.message);
    pipelines.set(key, { p, groups: new Map() });
  }
  // Copies of f16 values at odd elements (buffer copies move 4-byte words): a kernel of one
  // invocation per destination word, which takes each of its two halves from the source where it
  // lies in the copied range and keeps it elsewhere, so no two invocations write one word and the
  // bits are copied exactly. Its element offsets and count are a uniform at a dynamic offset (one
  // slot per copy in the run's parameter buffer).
  const HALF_COPY = [
    'struct P { so: u32, dst: u32, n: u32, w0: u32 }',
    '@group(0) @binding(0) var<storage, read> s: array<u32>;',
    '@group(0) @binding(1) var<storage, read_write> d: array<u32>;',
    '@group(0) @binding(2) var<uniform> p: P;',
    'fn half(j: u32) -> u32 { return (s[j >> 1u] >> ((j & 1u) * 16u)) & 0xffffu; }',
    '@compute @workgroup_size(64)',
    'fn main(@builtin(global_invocation_id) g: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>) {',
    '  let w = p.w0 + g.x + g.y * nw.x * 64u;',
    '  let e = 2u * w;',
    '  let end = p.dst + p.n;',
    '  if (e >= end) { return; }',
    '  var lo = d[w] & 0xffffu;',
    '  var hi = d[w] >> 16u;',
    '  if (e >= p.dst) { lo = half(p.so + e - p.dst); }',
    '  if (e + 1u < end) { hi = half(p.so + e + 1u - p.dst); }',
    '  d[w] = lo | (hi << 16u);',
    '}',
  ].join('\\n');
  let halfCopy;
  function halfCopier() {
    if (halfCopy !== undefined) return halfCopy;
    // (4: GPUShaderStage.COMPUTE)
    const layout = device.createBindGroupLayout({ entries: [
      { binding: 0, visibility: 4, buffer: { type: 'read-only-storage' } },
      { binding: 1, visibility: 4, buffer: { type: 'storage' } },
      { binding: 2, visibility: 4, buffer: { type: 'uniform', hasDynamicOffset: true } },
    ] });
    const module = device.createShaderModule({ code: HALF_COPY });
    const p = device.createComputePipeline({ layout: device.createPipelineLayout({ bindGroupLayouts: [layout] }), compute: { module, entryPoint: 'main' } });
    return (halfCopy = { layout, p });
  }
  // The run's f16 copies: their parameters written to one uniform buffer, a slot each; \`at(op)\`
  // binds op's buffers and returns its slot's offset and workgroups.
  function halfCopies(ops) {
    const hs = ops.filter((op) => op.k === 'h');
    if (hs.length === 0) return null;
    const c = halfCopier();
    const slot = Math.max(16, device.limits.minUniformBufferOffsetAlignment);
    const params = device.createBuffer({ size: hs.length * slot, usage: GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST });
    const words = new Uint32Array((hs.length * slot) / 4);
    hs.forEach((op, i) => words.set([op.so, op.do, op.n, op.do >> 1], (i * slot) / 4));
    device.queue.writeBuffer(params, 0, words);
    const groups = new Map();
    let i = 0;
    return {
      c,
      params,
      at(op) {
        const k = op.src + ',' + op.dst;
        let g = groups.get(k);
        if (g === undefined) {
          g = device.createBindGroup({ layout: c.layout, entries: [
            { binding: 0, resource: { buffer: buffers.get(op.src) } },
            { binding: 1, resource: { buffer: buffers.get(op.dst) } },
            { binding: 2, resource: { buffer: params, size: 16 } },
          ] });
          groups.set(k, g);
        }
        const n = Math.ceil((((op.do + op.n + 1) >> 1) - (op.do >> 1)) / 64);
        const x = Math.min(n, 65535);
        return { g, offset: i++ * slot, groups: [x, Math.ceil(n / x)] };
      },
    };
  }
  let dropped = 0;
  function evict(keys) {
    for (const k of keys) {
      const entry = pipelines.get(k);
      if (entry === undefined) continue;
      for (const g of entry.groups.keys())
        for (const id of g.split(',')) {
          const on = bound.get(Number(id));
          if (on !== undefined) bound.set(Number(id), on.filter((x) => x[0] !== entry.groups));
        }
      entry.groups.clear();
      pipelines.delete(k);
      dropped++;
    }
    if (dropped >= 16) { dropped = 0; collect(); }
  }
  async function run(req) {
    evict(req.evict || []);
    for (const k of req.compile || []) await compile(k.key, k.code);
    for (const a of req.allocs || []) alloc(a.id, a.bytes);
    for (const w of req.writes || []) {
      device.queue.writeBuffer(buffers.get(w.id), 0, w.data);
      counts.uploads++;
    }
    device.pushErrorScope('validation');
    let enc = device.createCommandEncoder();
    // Dispatches in compute passes, buffer copies between them, in the request's order. Profiled
    // (req.timing), every dispatch is a pass of its own, timed by timestamp queries written at its
    // pass' start and end ('timestamps'), or by a submit of its own waited for ('submits'): times
    // holds each dispatch's milliseconds, in order.
    const times = [];
    const timed = req.timing === 'timestamps' ? timestampSets((req.ops || []).filter((op) => op.k === 'd').length) : null;
    const submitted = async () => {
      device.queue.submit([enc.finish()]);
      counts.submits++;
      await device.queue.onSubmittedWorkDone();
      enc = device.createCommandEncoder();
    };
    const halves = halfCopies(req.ops || []);
    let pass = null, d = 0;
    for (const op of req.ops || []) {
      if (op.k === 'd') {
        if (req.timing === 'submits') {
          if (pass) { pass.end(); pass = null; }
          await submitted(); // what came before, finished first
        }
        if (!pass) pass = enc.beginComputePass(timed ? { timestampWrites: timed.writes(d) } : undefined);
        const entry = pipelines.get(op.key);
        pass.setPipeline(entry.p);
        pass.setBindGroup(0, bindGroup(entry, op.binds));
        pass.dispatchWorkgroups(op.groups[0], op.groups[1], op.groups[2]);
        counts.dispatches++;
        d++;
        if (req.timing !== undefined) { pass.end(); pass = null; }
        if (req.timing === 'submits') {
          const t0 = performance.now();
          await submitted();
          times.push(performance.now() - t0);
        }
      } else if (op.k === 'h') {
        // (not a profiled dispatch: a pass of its own where dispatches are timed)
        if (!pass) pass = enc.beginComputePass();
        const h = halves.at(op);
        pass.setPipeline(halves.c.p);
        pass.setBindGroup(0, h.g, [h.offset]);
        pass.dispatchWorkgroups(h.groups[0], h.groups[1]);
        if (req.timing !== undefined) { pass.end(); pass = null; }
        counts.copies++;
      } else {
        if (pass) { pass.end(); pass = null; }
        enc.copyBufferToBuffer(buffers.get(op.src), op.so, buffers.get(op.dst), op.do, op.bytes);
        counts.copies++;
      }
    }
    if (pass) pass.end();
    const stamps = timed ? timed.resolve(enc) : null;
    const staging = [];
    for (const r of req.reads || []) {
      const s = device.createBuffer({ size: Math.max(4, r.bytes), usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
      if (r.bytes > 0) enc.copyBufferToBuffer(buffers.get(r.id), 0, s, 0, r.bytes);
      staging.push(s);
    }
    device.queue.submit([enc.finish()]);
    counts.submits++;
    const e = await device.popErrorScope();
    if (e) throw new Error('dispatch: ' + e.message);
    const out = [];
    for (let i = 0; i < staging.length; i++) {
      const s = staging[i];
      await s.mapAsync(GPUMapMode.READ);
      out.push(s.getMappedRange().slice(0, req.reads[i].bytes));
      s.unmap();
      s.destroy();
      counts.readbacks++;
    }
    if (staging.length === 0) await device.queue.onSubmittedWorkDone();
    if (halves) halves.params.destroy();
    for (const id of req.frees || []) drop(id);
    if (stamps) times.push(...(await stamps()));
    return { data: out, times };
  }
  // Timestamp queries for n dispatches: a begin and an end per dispatch, in query sets of at most
  // 4096 queries; resolve() records their copy to a staging buffer and returns the read of each
  // dispatch's milliseconds (end - begin, nanoseconds on the device's clock).
  function timestampSets(n) {
    const per = 2048;
    const sets = [];
    for (let i = 0; i < n; i += per) sets.push(device.createQuerySet({ type: 'timestamp', count: 2 * Math.min(per, n - i) }));
    return {
      writes: (d) => ({ querySet: sets[Math.floor(d / per)], beginningOfPassWriteIndex: 2 * (d % per), endOfPassWriteIndex: 2 * (d % per) + 1 }),
      resolve(enc) {
        const bytes = 16 * n;
        const all = device.createBuffer({ size: Math.max(8, bytes), usage: GPUBufferUsage.QUERY_RESOLVE | GPUBufferUsage.COPY_SRC });
        const read = device.createBuffer({ size: Math.max(8, bytes), usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
        sets.forEach((q, k) => enc.resolveQuerySet(q, 0, q.count, all, k * per * 16));
        if (n > 0) enc.copyBufferToBuffer(all, 0, read, 0, bytes);
        return async () => {
          await read.mapAsync(GPUMapMode.READ);
          const t = new BigInt64Array(read.getMappedRange().slice(0, bytes));
          read.unmap(); read.destroy(); all.destroy();
          for (const q of sets) q.destroy();
          const ms = [];
          for (let i = 0; i < n; i++) ms.push(Math.max(0, Number(t[2 * i + 1] - t[2 * i]) / 1e6));
          return ms;
        };
      },
    };
  }
  async function handle(req) {
    try {
      if (req.kind === 'init') return await init(req);
      if (req.kind === 'run') { const r = await run(req); return { ok: true, data: r.data, ...(req.timing ? { times: r.times } : {}), counts: tally() }; }
      if (req.kind === 'free') { for (const id of req.ids) drop(id); return req.quiet ? undefined : { ok: true }; }
      if (req.kind === 'clear') { pipelines.clear(); bound.clear(); collect(); return { ok: true, counts: tally() }; }
      if (req.kind === 'counts') return { ok: true, counts: tally() };
      return { ok: false, error: 'unknown request ' + req.kind };
    } catch (e) {
      return { ok: false, error: String(e && e.message ? e.message : e) };
    }
  }
  return handle;
}
`;

/** The Node worker: loads the webgpu package named in workerData, answers on its port and raises the shared flag. */
export const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const { pathToFileURL } = require('node:url');
const flag = new Int32Array(workerData.flag);
const port = workerData.port;
${DEVICE_SOURCE}
require('node:v8').setFlagsFromString('--expose-gc');
const collect = require('node:vm').runInNewContext('gc');
let handle;
function answer(msg, id) {
  // read-backs are moved to the host, not copied (each is the reply's own)
  port.postMessage({ ...msg, id }, msg.data ? msg.data.filter((d) => d instanceof ArrayBuffer) : []);
  Atomics.store(flag, 0, 1);
  Atomics.notify(flag, 0);
}
async function serve(req) {
  if (handle === undefined) {
    try {
      const mod = await import(pathToFileURL(workerData.path).href);
      Object.assign(globalThis, mod.globals);
      handle = makeDeviceSide(mod.create(workerData.options), collect, 'no WebGPU adapter (Dawn found no Vulkan device: on Linux, Mesa 25 or newer gives lavapipe)');
    } catch (e) {
      answer({ ok: false, error: String(e && e.message ? e.message : e) }, req.id);
      return;
    }
  }
  const reply = await handle(req);
  if (reply !== undefined) answer(reply, req.id);
}
// One request at a time, in the order posted (a request's awaits must not let the next one in:
// a callAsync's run and a collected owner's free may arrive together).
let queue = Promise.resolve();
parentPort.on('message', (req) => { queue = queue.then(() => serve(req)); });
`;
