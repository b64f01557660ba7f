// The hand-off cost model (src/codegen/cpu/handoff.ts): a product splits over the threads where
// the time it saves, W / r (1 - 1/n), exceeds the measured hand-off latency L; r and L are running
// averages of measured products.
import { expect } from 'chai';
import { handoff, handoffMeasured, handoffThreads } from '../../src/codegen/cpu/handoff.js';

describe('codegen/cpu hand-off cost model', () => {
  const saved = { ...handoff };
  afterEach(() => Object.assign(handoff, saved));

  it('splits where the saved time exceeds the measured latency, and only then', () => {
    Object.assign(handoff, { rate: 1e7, latency: 0.1, on: true, kept: 0 }); // 10 G multiply-adds/s, 100 us
    // 2 threads: saves W / r / 2; 2e6 multiply-adds take 0.2 ms alone, save 0.1 ms: kept; 4e6 save 0.2 ms: split
    expect(handoffThreads(2e6, 2)).to.equal(1);
    expect(handoffThreads(4e6, 2)).to.equal(2);
    // 4 threads save 3/4 of the time: 2e6 multiply-adds save 0.15 ms
    expect(handoffThreads(2e6, 4)).to.equal(4);
    // a larger latency keeps more on the calling thread
    handoff.latency = 1;
    expect(handoffThreads(4e6, 2)).to.equal(1);
    expect(handoffThreads(4e7, 2)).to.equal(2);
    // one thread configured, or the model off: unchanged
    expect(handoffThreads(4e7, 1)).to.equal(1);
    handoff.on = false;
    expect(handoffThreads(10, 2)).to.equal(2);
  });

  it('splits one product in 17 of those it keeps, to measure the latency again, unless it saves under a quarter of the latency', () => {
    // 1e6 multiply-adds at 1e7 per ms save 0.05 ms on 2 threads: a third of 0.15 ms
    Object.assign(handoff, { rate: 1e7, latency: 0.15, on: true, kept: 0 });
    const got = Array.from({ length: 34 }, () => handoffThreads(1e6, 2));
    expect(got.filter((t) => t === 2).length).to.equal(2);
    expect(got[16]).to.equal(2);
    expect(got[33]).to.equal(2);
    // a fifth of 0.25 ms: never probed
    Object.assign(handoff, { latency: 0.25, kept: 0 });
    expect(Array.from({ length: 64 }, () => handoffThreads(1e6, 2)).every((t) => t === 1)).to.equal(true);
  });

  it('runs one in 257 of the jobs it splits on the calling thread, so that an underestimated rate recovers', () => {
    // the rate measured 4x too slow (a first call before tier-up): 1e6 multiply-adds look like 0.4 ms
    Object.assign(handoff, { rate: 2.5e6, latency: 0.05, on: true, splits: 0, kept: 0 });
    const got = Array.from({ length: 257 }, () => handoffThreads(1e6, 2));
    expect(got.filter((t) => t === 1).length).to.equal(1);
    expect(got[256]).to.equal(1);
    // that job on one thread takes its real 0.1 ms: the rate is taken at once, and the job stays
    handoffMeasured(1e6, 1, 0.1);
    expect(handoff.rate).to.equal(1e7);
    expect(handoffThreads(1e6, 2)).to.equal(1);
  });

  it('keeps a rate per kind of job (products, each shared tier kernel), one latency for all', () => {
    Object.assign(handoff, { rate: 1e7, latency: 0.1, on: true, kept: 0, rates: new Map() });
    // kernel kind 5 not measured yet: splits
    expect(handoffThreads(1e3, 2, 5)).to.equal(2);
    handoffMeasured(1e6, 1, 10, 5); // 1e5 per ms: a slow kernel
    expect(handoff.rates.get(5)).to.equal(1e5);
    expect(handoff.rate).to.equal(1e7);
    // 1e5 floats: 1 ms alone at 1e5/ms, saves 0.5 ms > 0.1: split; as a product (1e7/ms) it would not
    expect(handoffThreads(1e5, 2, 5)).to.equal(2);
    expect(handoffThreads(1e5, 2)).to.equal(1);
  });

  it('splits while no product has measured the rate yet', () => {
    Object.assign(handoff, { rate: 0, latency: 5, on: true });
    expect(handoffThreads(100, 2)).to.equal(2);
  });

  it('measures the rate on one thread and the latency as what a split product took beyond W / (n r)', () => {
    Object.assign(handoff, { rate: 0, latency: 0.05, on: true });
    handoffMeasured(1e6, 1, 0.1); // 1e7 per ms
    expect(handoff.rate).to.equal(1e7);
    handoffMeasured(0.5e6, 1, 0.1); // 5e6, slower: the average moves a fifth of the way
    expect(handoff.rate).to.be.closeTo(0.9e7, 1);
    handoffMeasured(2e6, 1, 0.1); // 2e7, faster: taken at once
    expect(handoff.rate).to.equal(2e7);
    handoffMeasured(1e6, 1, 0.1); // 1e7: a fifth of the way down
    expect(handoff.rate).to.be.closeTo(1.8e7, 1);
    const r = handoff.rate;
    // 3.6e6 on 2 threads at r: 0.1 ms of work each; took 0.13 ms, so 0.03 ms of hand-off
    handoffMeasured(3.6e6, 2, 0.1 + 0.03);
    expect(handoff.latency).to.be.closeTo(0.05 + 0.2 * (0.03 - 0.05), 1e-9);
    // a stall (5 ms of hand-off) counts as twice the estimate: L moves a fifth of L, not to 1 ms
    const l0 = handoff.latency;
    handoffMeasured(3.6e6, 2, 0.1 + 5);
    expect(handoff.latency).to.be.closeTo(l0 + 0.2 * l0, 1e-9);
    // latency that stays high still raises L by a fifth a split: past 0.1 ms within a few
    for (let i = 0; i < 5; i++) handoffMeasured(3.6e6, 2, 0.1 + 0.5);
    expect(handoff.latency).to.be.greaterThan(0.1);
    expect(handoff.rate).to.equal(r);
    // no time measured: nothing changes
    handoffMeasured(1e6, 1, 0);
    expect(handoff.rate).to.equal(r);
  });
});
