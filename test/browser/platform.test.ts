// The two platform modules against each other: the browser half's path and base64 helpers give
// Node's results, it has no environment, and its require names provideModule; provideModule
// checks its arguments.
import { expect } from 'chai';
import * as path from 'node:path';
import { platform as browser } from '../../src/platform/browser.js';
import { platform as node } from '../../src/platform/node.js';
import { provideModule, providedModules } from '../../src/platform/types.js';

describe('platform modules', () => {
  it('the browser half has no environment, config file or files', () => {
    expect(browser.name).to.equal('browser');
    expect(browser.env('HOME')).to.equal(undefined);
    expect(browser.kerasConfigPath({ KERAS_HOME: '/x' }, '/home/u')).to.equal(undefined);
    expect(() => browser.writeFile('/tmp/x', 'y')).to.throw(/writing "\/tmp\/x" needs Node\.js/);
    expect(() => browser.nodeBuiltin('worker_threads', 'the onnx backend')).to.throw(/the onnx backend \(node:worker_threads\) needs Node\.js/);
  });

  it('the browser half\'s base64 and paths agree with Node\'s', () => {
    const bytes = new Uint8Array(70000).map((_, i) => (i * 7919) & 255);
    expect(browser.base64(bytes)).to.equal(Buffer.from(bytes).toString('base64'));
    expect(browser.base64(bytes.subarray(3, 11))).to.equal(node.base64(bytes.subarray(3, 11)));
    for (const p of ['/a/b/c.bin', 'a/b', 'c', '/c']) {
      expect(browser.dirname(p), p).to.equal(path.posix.dirname(p));
      expect(browser.basename(p), p).to.equal(path.posix.basename(p));
    }
    expect(browser.join('/a/', 'b', 'c.bin')).to.equal(path.posix.join('/a/', 'b', 'c.bin'));
  });

  it('the browser half requires only provided modules, with Node\'s error code otherwise', () => {
    let error: unknown;
    try {
      browser.requireModule('gpu.js');
    } catch (e) {
      error = e;
    }
    expect((error as { code?: string }).code).to.equal('MODULE_NOT_FOUND');
    expect(String(error)).to.match(/provideModule\("gpu\.js", module\)/);
  });

  it('provideModule hands a module to both halves and checks its arguments', () => {
    const fake = { GPU: class {} };
    const before = providedModules.get('gpu.js');
    try {
      provideModule('gpu.js', fake);
      expect(browser.requireModule('gpu.js')).to.equal(fake);
      expect(node.requireModule('gpu.js')).to.equal(fake);
    } finally {
      if (before === undefined) providedModules.delete('gpu.js');
      else providedModules.set('gpu.js', before);
    }
    expect(() => provideModule('left-pad' as 'gpu.js', {})).to.throw(TypeError, /provideModule: argument id is "left-pad"; allowed: "gpu\.js"/);
    expect(() => provideModule('gpu.js', null as unknown as object)).to.throw(TypeError, /argument module for "gpu\.js" is null/);
  });
});
