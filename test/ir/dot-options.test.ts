// Issue 14 item 5: options that reach DOT text are checked, so no option can write DOT
// statements (rankdir was written as is: a link could be put into the SVG), and a name Graphviz
// cannot read is refused by name instead of surfacing as a Graphviz syntax error.
import { expect } from 'chai';
import { backend as K, dot, svg, ValueError } from '../../src/index.js';
import type { DotOptions } from '../../src/index.js';

async function rejection(p: Promise<unknown>): Promise<Error> {
  try {
    await p;
  } catch (e) {
    return e as Error;
  }
  throw new Error('expected a rejection');
}

describe('ir/dot: options are checked before any DOT is written', () => {
  const x = K.placeholder({ shape: [2], name: 'x' });
  const y = K.exp(x);
  const hostile = 'TB; node [URL="javascript:alert(1)"]';

  it('rankdir outside TB, BT, LR, RL is refused by dot and svg, naming the option and the allowed values', async () => {
    expect(() => dot(y, { rankdir: hostile } as unknown as DotOptions)).to.throw(ValueError, /^dot: option rankdir must be one of "TB", "BT", "LR", "RL", got the string "TB; node/);
    const e = await rejection(svg(y, { rankdir: hostile } as unknown as DotOptions));
    expect(e).to.be.instanceOf(ValueError);
    expect(e.message).to.match(/^svg: option rankdir must be one of/);
    expect(dot(y, { rankdir: 'LR' })).to.contain('rankdir=LR;');
  });

  it('other options of the wrong kind, and unknown options, are refused', () => {
    expect(() => dot(y, { title: 3 } as unknown as DotOptions)).to.throw(TypeError, /^dot: option title must be a string, got number 3/);
    expect(() => dot(y, { outputNames: ['a', {}] } as unknown as DotOptions)).to.throw(TypeError, /^dot: option outputNames must be an array of strings/);
    expect(() => dot(y, { label: 'x' } as unknown as DotOptions)).to.throw(TypeError, /^dot: option label must be a function/);
    expect(() => dot(y, { rankDir: 'LR' } as unknown as DotOptions)).to.throw(ValueError, /^dot: unknown option "rankDir" \(allowed: title, rankdir/);
  });

  it('hostile strings in titles, names and output names stay inside quoted strings: the SVG has no link', async () => {
    const z = K.placeholder({ shape: [2], name: 'a"]; node [URL="javascript:alert(2)"]; x [label="' });
    const text = await svg(K.exp(z), { title: hostile, outputNames: ['"];n [URL="javascript:alert(3)"'] });
    expect(text).to.not.contain('xlink:href');
    // Node tooltips (provenance) are anchors with a title only; no anchor has a link.
    expect(text).to.not.match(/<a [^>]*href/);
    expect(text).to.not.contain('javascript:alert(2)"]');
  });

  it('a NUL character in a title, an output name or a label is refused naming which, not a Graphviz syntax error', async () => {
    expect(() => dot(y, { title: 'a\0b' })).to.throw(ValueError, /^dot: option title "a\\u0000b" contains a NUL character/);
    expect(() => dot(y, { outputNames: ['o\0'] })).to.throw(ValueError, /^dot: output name 0 "o\\u0000" contains a NUL character/);
    expect(() => dot(y, { label: () => 'l\0' })).to.throw(ValueError, /^dot: the label of node "x" "l\\u0000\\nfloat32 \(2,\)" contains a NUL character/);
    const e = await rejection(svg(y, { title: 'a\0b' }));
    expect(e.message).to.match(/^dot: option title .* contains a NUL character/);
    // a placeholder's name is written JSON-escaped in its label, so it lays out
    const z = K.placeholder({ shape: [2], name: 'bad\0name' });
    expect(await svg(K.exp(z))).to.contain('bad\\u0000name');
  });
});
