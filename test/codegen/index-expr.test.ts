import { expect } from 'chai';
import { iadd, iclamp, iconst, idiv, imod, iscale, ivar, naturalCompare, newVar, range, ravel, substitute, unravel } from '../../src/codegen/kernel/index-expr.js';

describe('codegen/index-expr', () => {
  const i = newVar(4);
  const j = newVar(6);

  it('keeps affine sums in normal form (like terms summed, zeros dropped)', () => {
    const x = iadd(iscale(ivar(i), 6), ivar(j), iconst(2), iscale(ivar(j), -1), iconst(-2));
    expect(x.key).to.equal(iscale(ivar(i), 6).key);
    expect(x.coef(i)).to.equal(6);
    expect(x.coef(j)).to.equal(0);
  });

  it('splits floor division and modulo when the remainder stays in range', () => {
    const flat = iadd(iscale(ivar(i), 6), ivar(j)); // 0 <= j < 6
    expect(idiv(flat, 6).key).to.equal(ivar(i).key);
    expect(imod(flat, 6).key).to.equal(ivar(j).key);
    expect(idiv(iadd(flat, iconst(12)), 6).key).to.equal(iadd(ivar(i), iconst(2)).key);
  });

  it('leaves a div/mod atom when the layout does not allow a split, with the right range', () => {
    const d = idiv(ivar(j), 4);
    expect(d.terms.length).to.equal(1);
    expect(range(d)).to.deep.equal([0, 1]);
    expect(range(imod(ivar(j), 4))).to.deep.equal([0, 3]);
  });

  it('ravel(unravel(f)) is f: a reshape of a contiguous array is affine again', () => {
    const k = newVar(24);
    const back = ravel(unravel(ivar(k), [2, 3, 4]), [2, 3, 4]);
    expect(back.key).to.equal(ivar(k).key);
  });

  it('unravel(ravel(c)) is c', () => {
    const coords = [ivar(i), ivar(j)];
    const back = unravel(ravel(coords, [4, 6]), [4, 6]);
    expect(back.map((x) => x.key)).to.deep.equal(coords.map((x) => x.key));
  });

  it('folds nested floor divisions', () => {
    const k = newVar(100);
    expect(idiv(idiv(ivar(k), 5), 4).key).to.equal(idiv(ivar(k), 20).key);
  });

  it('clamps only where the range needs it', () => {
    expect(iclamp(ivar(i), 0, 3).key).to.equal(ivar(i).key);
    const c = iclamp(iadd(ivar(i), iconst(-1)), 0, 3);
    expect(range(c)).to.deep.equal([0, 2]);
    expect(iclamp(iadd(ivar(i), iconst(-10)), 0, 3).key).to.equal(iconst(0).key);
  });

  it('substitutes variables (how adjacent loops are merged)', () => {
    const m = newVar(24);
    const x = iadd(iscale(ivar(i), 6), ivar(j));
    const merged = substitute(x, (v) => (v.id === i.id ? iconst(0) : v.id === j.id ? ivar(m) : undefined));
    expect(merged.key).to.equal(ivar(m).key);
  });

  it('orders a sum\'s terms by the variables\' creation order, whatever the process-wide counter has reached', () => {
    expect(naturalCompare('v9', 'v10')).to.be.below(0);
    expect(naturalCompare('(3*v10+0)/4', '(3*v9+0)/4')).to.be.above(0);
    expect(naturalCompare('v12', 'v12')).to.equal(0);
    expect(naturalCompare('v1', 'v1x')).to.be.below(0);
    // pairs of variables made one after the other at several counter values, some straddling a digit boundary
    for (let n = 0; n < 120; n++) {
      const a = newVar(4);
      const b = newVar(5);
      const order = iadd(ivar(b), ivar(a)).terms.map(([t]) => (t.kind === 'var' ? t.v.id : -1));
      expect(order, `variables ${a.id} and ${b.id}`).to.deep.equal([a.id, b.id]);
    }
  });
});
