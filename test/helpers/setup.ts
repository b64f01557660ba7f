// Loaded before every test file (.mocharc.json `require`): point Keras' config at a temporary
// KERAS_HOME so tests never read or write the real ~/.keras.
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { reloadConfig } from '../../src/api/config.js';
import { stats } from '../../src/runtime/gpu/stats.js';
import { setWarningSink } from '../../src/runtime/warn.js';
import { excluded } from './exclusions.js';
import { skipReport } from './needs.js';

const home = fs.mkdtempSync(path.join(os.tmpdir(), 'theanine-test-'));
process.env['KERAS_HOME'] = home;
delete process.env['KERAS_BACKEND'];
delete process.env['THEANINE_DEVICE'];
// Every pipeline the tests compile is verified after each pass (src/passes/pass.ts).
process.env['THEANINE_VERIFY_PASSES'] = '1';
// THEANINE_MODE=debug runs the suite in checking mode (docs/debugging.md).
reloadConfig({ env: { KERAS_HOME: home, ...(process.env['THEANINE_MODE'] !== undefined ? { THEANINE_MODE: process.env['THEANINE_MODE'] } : {}) } });
process.on('exit', () => fs.rmSync(home, { recursive: true, force: true }));

// Warnings of expected fallbacks (a gpu kernel on the host, no GL context) are collected and
// printed after the reporter's output instead of between its dots.
const warnings: string[] = [];
setWarningSink((m) => { warnings.push(m); });
// Libraries' console.warn too (TensorFlow.js' banner on its first cpu-backend tensor).
// XNNPack's statuses go on to stderr as without this hook: a wasm backend that TensorFlow.js started
// itself (before theanine's loader) binds console.warn at start-up, and theanine takes those lines
// from stderr while a function runs (src/runtime/tfjs/load.ts watchBackendErrors).
console.warn = (...args: unknown[]) => {
  const m = args.map(String).join(' ').trim();
  if (/\bXNN\b/.test(m)) process.stderr.write(`${m}\n`);
  else warnings.push(m.replace(/\s*\n\s*/g, ' '));
};

/** After every test: what the named target rules left out, what was skipped and why, and what the gpu device ran. */
export const mochaHooks = {
  afterAll(): void {
    for (const [rule, cases] of excluded) console.log(`\n${cases.length} cases excluded by rule "${rule}"`);
    if (warnings.length > 0) console.log(`\n${warnings.length} warnings (expected fallbacks and libraries' notices, each printed once per process):\n${warnings.map((w) => `  ${w}`).join('\n')}`);
    for (const line of skipReport()) console.log(`\n${line}`);
    if (stats.kernelRuns > 0) {
      const host = [...stats.hostNodes].sort((a, b) => b[1] - a[1]).map(([k, n]) => `${k} ${n}`).join(', ');
      console.log(`gpu device: ${stats.kernelsCompiled} kernels compiled, ${stats.kernelRuns} kernel runs; nodes computed on the host: ${host || 'none'}`);
    }
  },
};
