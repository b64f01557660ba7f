let wasmMs = 0, fnMs = 0, nW = 0, nF = 0;
const M = WebAssembly.Module;
(globalThis as any).WebAssembly.Module = function (b: any) { const t = performance.now(); const m = new M(b); wasmMs += performance.now() - t; nW++; return m; } as any;
(globalThis as any).WebAssembly.Module.prototype = M.prototype;
const F = Function;
(globalThis as any).Function = new Proxy(F, { construct(t, a) { const t0 = performance.now(); const r = Reflect.construct(t, a); fnMs += performance.now() - t0; nF++; return r; }, apply(t, s, a) { const t0 = performance.now(); const r = Reflect.apply(t, s, a); fnMs += performance.now() - t0; nF++; return r; } });
await import('./tmp-lstm.ts');
console.log({ wasmMs, nW, fnMs, nF });
