// The layers of src/, lowest first: a module imports only from its own layer and those below.
// The IR knows nothing of passes or devices; autodiff builds IR; codegen (kernel IR, renderers)
// and passes (graph rewrites) both sit on the IR and not on each other (fusion asks a target's
// templates through the FusionTarget it is handed); runtimes run what codegen makes; the API
// builds on all of them; examples on the API, the CLI on the examples. `#platform` is the host, below all.
import { expect } from 'chai';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';

const SRC = join(import.meta.dirname, '../src');
const LAYERS: readonly (readonly string[])[] = [
  ['platform'], ['ir'], ['autodiff'], ['codegen', 'passes'], ['runtime'], ['api'], ['examples'], ['cli'], ['index.ts'],
];
const layerOf = (top: string): number => LAYERS.findIndex((l) => l.includes(top));

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((f) => {
    const p = join(dir, f);
    return statSync(p).isDirectory() ? files(p) : p.endsWith('.ts') ? [p] : [];
  });
}

/** Every `import ... from` / `export ... from` of a module, as [importer, imported] top-level folders. */
function edges(): { from: string; to: string; where: string }[] {
  const out: { from: string; to: string; where: string }[] = [];
  for (const f of files(SRC)) {
    const from = relative(SRC, f).split('/')[0]!;
    for (const m of readFileSync(f, 'utf8').matchAll(/^(?:import|export)\b[^;]*?\bfrom '([^']+)'/gms)) {
      const spec = m[1]!;
      let to: string;
      if (spec === '#platform') to = 'platform';
      else if (spec.startsWith('.')) to = relative(SRC, normalize(join(dirname(f), spec))).split('/')[0]!;
      else continue;
      out.push({ from, to, where: `${relative(SRC, f)} imports ${spec}` });
    }
  }
  return out;
}

describe('src/ layering', () => {
  it('every top-level folder has a layer', () => {
    const tops = readdirSync(SRC).filter((f) => f !== 'README.md');
    expect(tops.filter((t) => layerOf(t) < 0), 'folders missing from LAYERS').to.deep.equal([]);
  });

  it('no module imports from a layer above its own, nor codegen from passes or passes from codegen', () => {
    const all = edges();
    expect(all.length, 'imports found').to.be.greaterThan(500);
    const bad = all.filter((e) => layerOf(e.to) > layerOf(e.from) || (e.from !== e.to && layerOf(e.to) === layerOf(e.from) && e.from !== 'index.ts'));
    expect(bad.map((e) => e.where)).to.deep.equal([]);
  });

  it('the CLI uses only the package surface: nothing from runtime, codegen, passes or ir', () => {
    const inner = new Set(['runtime', 'codegen', 'passes', 'ir', 'autodiff']);
    const bad = edges().filter((e) => e.from === 'cli' && inner.has(e.to));
    expect(bad.map((e) => e.where)).to.deep.equal([]);
  });

  it('no import circle inside src (imports that stay at run time; `import type` is erased)', () => {
    const graph = new Map<string, string[]>();
    for (const f of files(SRC)) {
      const from = relative(SRC, f);
      const to: string[] = [];
      for (const m of readFileSync(f, 'utf8').matchAll(/^(?:import|export)\s+(?!type\b)[^;]*?\bfrom '(\.[^']+)'/gms)) {
        to.push(relative(SRC, normalize(join(dirname(f), m[1]!))).replace(/\.js$/, '.ts'));
      }
      graph.set(from, to);
    }
    // Tarjan's strongly connected components: any of more than one module is a circle.
    let index = 0;
    const stack: string[] = [];
    const on = new Set<string>();
    const idx = new Map<string, number>();
    const low = new Map<string, number>();
    const circles: string[][] = [];
    const visit = (v: string): void => {
      idx.set(v, index); low.set(v, index); index++; stack.push(v); on.add(v);
      for (const w of graph.get(v) ?? []) {
        if (!graph.has(w)) continue;
        if (!idx.has(w)) { visit(w); low.set(v, Math.min(low.get(v)!, low.get(w)!)); } else if (on.has(w)) low.set(v, Math.min(low.get(v)!, idx.get(w)!));
      }
      if (low.get(v) === idx.get(v)) {
        const c: string[] = [];
        let w: string;
        do { w = stack.pop()!; on.delete(w); c.push(w); } while (w !== v);
        if (c.length > 1) circles.push(c.sort());
      }
    };
    for (const v of graph.keys()) if (!idx.has(v)) visit(v);
    expect(graph.size, 'modules found').to.be.greaterThan(200);
    expect(circles).to.deep.equal([]);
  });
});
