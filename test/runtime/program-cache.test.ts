// The program cache every device's compiler uses: least recently used programs and shape
// specialisations go first, and a dropped specialisation is reported (the cpu's byte budget,
// the gpu's uploads).
import { expect } from 'chai';
import { ProgramCache, shapesKey } from '../../src/runtime/program-cache.js';

interface P { readonly name: string; readonly specs: Map<string, string> }

describe('runtime/program-cache', () => {
  it('keeps the most recently used programs, making each once', () => {
    const cache = new ProgramCache<P, string>({ maxPrograms: 2, maxSpecs: 4 });
    let made = 0;
    const get = (k: string) => cache.program(k, () => { made++; return { name: k, specs: new Map() }; });
    const a = get('a');
    get('b');
    expect(get('a')).to.equal(a);
    get('c'); // evicts b, the least recently used
    expect(made).to.equal(3);
    expect(get('a')).to.equal(a);
    get('b');
    expect(made).to.equal(4);
  });

  it('bounds the specialisations per program and reports each one it drops', () => {
    const dropped: string[] = [];
    const cache = new ProgramCache<P, string>({ onDropSpec: (p, key, s) => dropped.push(`${p.name}:${key}=${s}`), maxPrograms: 4, maxSpecs: 3 });
    const p = cache.program('p', () => ({ name: 'p', specs: new Map() }));
    const spec = (shapes: number[][]) => cache.spec(p, shapesKey(shapes), () => `spec${shapesKey(shapes)}`);
    for (let b = 1; b <= 3; b++) spec([[b, 4]]);
    spec([[1, 4]]); // used again: now the most recent
    spec([[9, 4]]);
    expect(dropped).to.deep.equal(['p:2x4=spec2x4']);
    expect([...p.specs.keys()]).to.deep.equal(['3x4', '1x4', '9x4']);
    for (let b = 10; b < 30; b++) spec([[b, 4]]);
    expect(p.specs.size).to.equal(3);
  });

  it('bounds the bytes specialisations hold over all programs, least recently used first', () => {
    const dropped: string[] = [];
    const cache = new ProgramCache<P, string>({ onDropSpec: (p, key) => dropped.push(`${p.name}:${key}`), bytes: (s) => s.length, budgetBytes: 10 });
    const p = cache.program('p', () => ({ name: 'p', specs: new Map() }));
    const q = cache.program('q', () => ({ name: 'q', specs: new Map() }));
    cache.spec(p, 'a', () => 'aaaa');
    cache.spec(q, 'b', () => 'bbbb');
    cache.spec(p, 'a', () => 'never made');
    expect(cache.heldBytes()).to.equal(8);
    cache.spec(q, 'c', () => 'cccc'); // 12 bytes: q's b, the least recently used, goes
    expect(dropped).to.deep.equal(['q:b']);
    expect(cache.heldBytes()).to.equal(8);
    expect([...q.specs.keys()]).to.deep.equal(['c']);
    cache.spec(p, 'big', () => 'x'.repeat(20)); // over the budget alone: it stays, and so does q's most recent
    expect(dropped).to.deep.equal(['q:b', 'p:a']);
    expect(cache.heldBytes()).to.equal(24);
    cache.spec(q, 'd', () => 'dddd'); // q's c is no longer its most recent: it goes
    expect(dropped).to.deep.equal(['q:b', 'p:a', 'q:c']);
    expect(cache.heldBytes()).to.equal(24);
  });

  it('keeps the most recent specialisation of each program: two over the budget, used in turn, keep their buffers', () => {
    const shed: string[] = [];
    const cache = new ProgramCache<P, string>({ bytes: (s) => s.length, budgetBytes: 10, shed: (s) => shed.push(s) });
    const p = cache.program('p', () => ({ name: 'p', specs: new Map() }));
    const q = cache.program('q', () => ({ name: 'q', specs: new Map() }));
    for (let i = 0; i < 5; i++) {
      cache.spec(p, 'a', () => 'a'.repeat(20));
      cache.spec(q, 'b', () => 'b'.repeat(30));
    }
    expect(shed).to.deep.equal([]);
    expect(cache.heldBytes()).to.equal(50);
    cache.spec(p, 'c', () => 'c'.repeat(20)); // p's a is now older: shed, its code kept
    expect(shed).to.deep.equal(['a'.repeat(20)]);
    expect([...p.specs.keys()]).to.deep.equal(['a', 'c']);
  });
});
