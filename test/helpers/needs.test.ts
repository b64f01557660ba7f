// The visible-skip mechanism itself (test/helpers/needs.ts): a missing requirement skips and is
// reported, or fails under THEANINE_TEST_NO_SKIP=1; nothing happens when nothing is missing.
import { expect } from 'chai';
import { NO_SKIP, needs, skipReport, skipped } from './needs.js';

describe('test helpers: needs (visible skips)', () => {
  const saved = process.env[NO_SKIP];
  let before: number;
  beforeEach(() => { before = skipped.length; });
  afterEach(() => {
    skipped.splice(before); // leave the run's own report as it was
    if (saved === undefined) delete process.env[NO_SKIP]; else process.env[NO_SKIP] = saved;
  });

  /** A stand-in for mocha's context that records skip(). */
  const context = () => {
    const calls = { skipped: 0 };
    return { calls, ctx: { skip: () => { calls.skipped++; } } as unknown as Mocha.Context };
  };

  it('skips and records what and why when something is missing', () => {
    delete process.env[NO_SKIP];
    const { calls, ctx } = context();
    needs(ctx, 'the thing', 'no widget here; install one');
    expect(calls.skipped).to.equal(1);
    expect(skipReport().at(-1)).to.equal(`skipped: the thing: no widget here; install one (CI sets ${NO_SKIP}=1 so that this fails instead)`);
  });

  it('fails instead under THEANINE_TEST_NO_SKIP=1', () => {
    process.env[NO_SKIP] = '1';
    const { calls, ctx } = context();
    expect(() => needs(ctx, 'the thing', 'no widget here')).to.throw(`the thing: no widget here (${NO_SKIP}=1 makes this a failure, not a skip)`);
    expect(calls.skipped).to.equal(0);
    expect(skipped.length).to.equal(before);
  });

  it('does nothing when nothing is missing', () => {
    const { calls, ctx } = context();
    needs(ctx, 'the thing', undefined);
    expect(calls.skipped).to.equal(0);
    expect(skipped.length).to.equal(before);
  });
});
