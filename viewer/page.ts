// The viewer page: an editor for a program (viewer/model.ts says what one returns), and what
// theanine, running in this page, makes of it: the graph and its gradient graph, the optimizer
// pass by pass, the kernels of the compiled function, and reverse mode (or, for a program with
// tangents, forward mode) step by step. Graph
// layout is Graphviz (@viz-js/viz); the editor is CodeMirror 6; the rest is plain DOM.
import { javascript } from '@codemirror/lang-javascript';
import { EditorSelection, StateEffect, StateField } from '@codemirror/state';
import { Decoration, type DecorationSet, keymap } from '@codemirror/view';
import { instance as vizInstance } from '@viz-js/viz';
import { basicSetup, EditorView } from 'codemirror';
import { GPU } from 'gpu.js';
import { provideModule, setEnvironment } from '../src/index.js';
import type { Node } from '../src/ir/node.js';
import type { CompiledFunction } from '../src/runtime/function.js';
import { VIEWER_EXAMPLES, VIEWER_EXAMPLE_NAMES, type ViewerExample } from '../src/examples/viewer-programs.js';
import {
  analyze, type ViewerDevice, type ViewerLevel, brief, callsOf, compile, describeNode, kernelsOf, numbers, numbersAsync, profileBars, programLineOf, referenceNumbers, runProgram, stepThrough,
  type Analysis, type KernelView, type StepThrough,
} from './model.js';
import { toDotWithIds } from '../src/ir/dot.js';
import { fusedLabel } from '../src/passes/fusion.js';

provideModule('gpu.js', { GPU });

const $ = <T extends HTMLElement>(id: string): T => {
  const e = document.getElementById(id);
  if (e === null) throw new Error(`viewer: the page has no #${id}`);
  return e as T;
};

// The editor, with one highlighted line (the line that built a clicked node, where known).
const setLine = StateEffect.define<number | undefined>();
const lineField = StateField.define<DecorationSet>({
  create: () => Decoration.none,
  update(deco, tr) {
    for (const e of tr.effects) {
      if (!e.is(setLine)) continue;
      if (e.value === undefined || e.value < 1 || e.value > tr.state.doc.lines) return Decoration.none;
      return Decoration.set([Decoration.line({ class: 'cm-built-here' }).range(tr.state.doc.line(e.value).from)]);
    }
    return deco.map(tr.changes);
  },
  provide: (f) => EditorView.decorations.from(f),
});
const editor = new EditorView({
  doc: '',
  extensions: [
    // Ctrl-Enter (Cmd-Enter) runs the program, ahead of basicSetup's own bindings.
    keymap.of([{ key: 'Mod-Enter', run: () => { void run(($('device') as HTMLSelectElement).value as ViewerDevice).catch(() => undefined); return true; } }]),
    basicSetup, javascript(), lineField, EditorView.theme({ '.cm-built-here': { backgroundColor: '#fff3b0' } })],
  parent: $('editor'),
});

const setCode = (code: string) => editor.dispatch({ changes: { from: 0, to: editor.state.doc.length, insert: code } });

/** Highlights the program line that built `n` (its provenance), or says that the node records none. */
function showSource(n: Node): void {
  const line = programLineOf(n);
  editor.dispatch({ effects: setLine.of(line) });
  if (line !== undefined) {
    const pos = editor.state.doc.line(line).from;
    editor.dispatch({ selection: EditorSelection.cursor(pos), scrollIntoView: true });
  }
  const calls = callsOf(n);
  $('selected').textContent = `${describeNode(n)}${calls.length > 0 ? ` — ${calls.slice(0, 3).join('; ')}` : ''}${line !== undefined ? ` at line ${line}` : ' (no line of the program)'}`;
}

const vizReady = vizInstance();

/** Renders DOT into `host` and returns, per DOT id (a node's `<title>`), its SVG group. */
async function draw(host: HTMLElement, dot: string): Promise<Map<string, SVGGElement>> {
  const viz = await vizReady;
  const svg = viz.renderSVGElement(dot);
  // Graphviz gives the natural size in pt. A graph up to 1.6 times wider than its panel is scaled
  // to fit; a wider one (an unrolled Scan) keeps its size and the panel scrolls, so it stays legible.
  const natural = Number.parseFloat(svg.getAttribute('width') ?? '0') * 4 / 3;
  const panel = host.clientWidth > 0 ? host.clientWidth : 900;
  svg.removeAttribute('height');
  if (natural > 1.6 * panel) svg.setAttribute('width', `${Math.round(natural / 1.6)}px`);
  else svg.removeAttribute('width');
  svg.classList.toggle('wide', natural > 1.6 * panel);
  svg.classList.add('graph');
  host.replaceChildren(svg);
  const groups = new Map<string, SVGGElement>();
  for (const g of svg.querySelectorAll<SVGGElement>('g.node, g.cluster')) {
    const t = g.querySelector('title')?.textContent;
    if (t !== null && t !== undefined) groups.set(t, g);
  }
  return groups;
}

/** Clicking a drawn node shows it (and its source line) and calls `also`. */
function clickable(groups: Map<string, SVGGElement>, ids: Map<Node, string>, also?: (n: Node) => void): void {
  for (const [n, id] of ids) {
    const g = groups.get(id);
    if (g === undefined) continue;
    g.style.cursor = 'pointer';
    g.addEventListener('click', (ev) => { ev.stopPropagation(); showSource(n); also?.(n); });
  }
}

function mark(g: SVGGElement | undefined, cls: string, on = true): void {
  g?.classList.toggle(cls, on);
}

interface State {
  analysis: Analysis;
  device: ViewerDevice;
  fn: CompiledFunction;
  kernels: KernelView[];
  steps: StepThrough;
  step: number;
  stepGroups: Map<string, SVGGElement>;
  result: { device: string; numbers: number[][]; cpu: number[][]; reference: number[][] };
}
let state: State | undefined;

function setStatus(text: string, error = false): void {
  const s = $('status');
  s.textContent = text;
  s.classList.toggle('error', error);
}

function tab(name: string): void {
  for (const b of document.querySelectorAll<HTMLButtonElement>('#tabs button')) b.classList.toggle('active', b.dataset['tab'] === name);
  for (const p of document.querySelectorAll<HTMLElement>('.panel')) p.hidden = p.id !== `panel-${name}`;
}

async function showGraph(a: Analysis): Promise<void> {
  const groups = await draw($('graph'), a.built.dot);
  clickable(groups, a.built.ids);
}

async function showPasses(a: Analysis): Promise<void> {
  const body = $('passes-table').querySelector('tbody')!;
  body.replaceChildren();
  const pick = async (k: number) => {
    const p = a.passes[k]!;
    for (const [i, row] of [...body.children].entries()) row.classList.toggle('active', i === k);
    $('pass-title').textContent = `after ${p.name}: ${p.doc}. Changed nodes are highlighted${p.removed.length > 0 ? `; gone: ${p.removed.join(', ')}` : ''}.${p.note !== undefined ? ` ${p.note}.` : ''}`;
    // eqsat: greedy's graph (what the search started from) beside the one it returned.
    const greedy = $('pass-greedy');
    greedy.hidden = p.beforeDot === undefined;
    if (p.beforeDot !== undefined) await draw(greedy, p.beforeDot);
    const groups = await draw($('pass-graph'), p.dot);
    for (const n of p.added) mark(groups.get(p.ids.get(n) ?? ''), 'changed');
    clickable(groups, p.ids);
  };
  a.passes.forEach((p, k) => {
    const tr = document.createElement('tr');
    for (const c of [p.name, p.ms.toFixed(2), `${p.nodesBefore} → ${p.nodesAfter}`, String(p.added.length), p.doc]) {
      const td = document.createElement('td');
      td.textContent = c;
      tr.append(td);
    }
    tr.addEventListener('click', () => void pick(k));
    body.append(tr);
  });
  const first = a.passes.findIndex((p) => p.added.length > 0);
  if (a.passes.length > 0) await pick(Math.max(0, first));
}

async function showKernels(s: State): Promise<void> {
  $('kernels-device').textContent = `f.device: ${s.fn.device} — ${s.kernels.length} kernels from f.source(); click one to find its node, or a node to find its kernel`;
  const { text, ids } = toDotWithIds(s.fn.graph, { label: fusedLabel });
  const groups = await draw($('kernel-graph'), text);
  const list = $('kernel-list');
  list.replaceChildren();
  const items: HTMLElement[] = [];
  const pick = (k: number) => {
    const kv = s.kernels[k]!;
    items.forEach((it, i) => it.classList.toggle('active', i === k));
    $('kernel-source').textContent = kv.source;
    for (const g of groups.values()) mark(g, 'linked', false);
    if (kv.node !== undefined) {
      const g = groups.get(ids.get(kv.node) ?? '');
      mark(g, 'linked');
      g?.scrollIntoView({ block: 'nearest', inline: 'center' });
      showSource(kv.node);
    } else $('selected').textContent = `${kv.name}: ${kv.label} (a helper step, not one node of the graph)`;
  };
  s.kernels.forEach((kv, k) => {
    const li = document.createElement('li');
    li.textContent = `${kv.name}  ${kv.label}${kv.node === undefined ? '' : `  → ${describeNode(kv.node)}`}`;
    li.addEventListener('click', () => pick(k));
    list.append(li);
    items.push(li);
  });
  clickable(groups, ids, (n) => {
    const k = s.kernels.findIndex((kv) => kv.node === n);
    if (k >= 0) pick(k);
  });
  if (s.kernels.length > 0) pick(0);
}

/** Text lines of a drawn node whose label line starts with `prefix` ('value ', 'grad '). */
function labelLines(g: SVGGElement | undefined, prefix: string): SVGTextElement[] {
  return g === undefined ? [] : [...g.querySelectorAll<SVGTextElement>('text')].filter((t) => (t.textContent ?? '').startsWith(prefix));
}

function totalSteps(s: StepThrough): number {
  return s.forward.length + s.backward.length;
}

type StepView = { index: number; phase: 'start' | 'forward' | 'backward'; node?: string; value?: string; adjoint?: string; tangent?: string; from?: string[] };

/** Shows forward mode up to step `k`: each node's value and tangent together, from the inputs on. */
function showTangentStep(s: State, k: number): StepView {
  const st = s.steps;
  const total = totalSteps(st);
  s.step = Math.max(0, Math.min(total, k));
  const done = new Set(st.forward.slice(0, s.step).map((f) => f.node));
  for (const [n, id] of st.ids) {
    const g = s.stepGroups.get(id);
    mark(g, 'has-value', done.has(n));
    mark(g, 'has-tangent', done.has(n));
    mark(g, 'has-grad', false);
    mark(g, 'current', false);
    for (const t of [...labelLines(g, 'value '), ...labelLines(g, 'tangent ')]) t.style.visibility = done.has(n) ? 'visible' : 'hidden';
  }
  $('step-count').textContent = `step ${s.step} of ${total}`;
  const info = $('step-info');
  if (s.step === 0) {
    info.textContent = 'Nothing computed yet. Step forward: each node\'s value and its tangent (how fast it changes when the inputs move along the direction; dual numbers) from its inputs\' values and tangents, in one pass.';
    return { index: 0, phase: 'start' };
  }
  const f = st.forward[s.step - 1]!;
  mark(s.stepGroups.get(st.ids.get(f.node) ?? ''), 'current');
  const from = (f.from ?? []).map((c) => c.op);
  const tangent = f.tangent === undefined ? undefined : brief(f.tangent, 8);
  info.textContent = `forward ${s.step}/${total}: ${describeNode(f.node)}\nvalue   = ${brief(f.value, 8)}\ntangent = ${tangent ?? '(not a float: none)'}\n` +
    (f.node.inputs.length === 0 ? 'an input: its tangent is the direction given for it (zero if none)'
      : from.length === 0 ? 'no input depends on the direction: the tangent is zero (never built)'
        : `its tangent rule applied to the tangents of ${from.join(', ')}`);
  return { index: s.step, phase: 'forward', node: f.label, value: brief(f.value, 8), ...(tangent !== undefined ? { tangent } : {}), from };
}

/** Shows reverse mode up to step `k` (0: nothing computed; forward values first, then adjoints from the loss back). */
function showStep(s: State, k: number): StepView {
  const st = s.steps;
  if (st.mode === 'forward') return showTangentStep(s, k);
  const total = totalSteps(st);
  s.step = Math.max(0, Math.min(total, k));
  const F = st.forward.length;
  const fwdDone = new Set(st.forward.slice(0, Math.min(s.step, F)).map((f) => f.node));
  const bwdDone = new Set(st.backward.slice(0, Math.max(0, s.step - F)).map((b) => b.node));
  for (const [n, id] of st.ids) {
    const g = s.stepGroups.get(id);
    mark(g, 'has-value', fwdDone.has(n));
    mark(g, 'has-grad', bwdDone.has(n));
    mark(g, 'current', false);
    for (const t of labelLines(g, 'value ')) t.style.visibility = fwdDone.has(n) ? 'visible' : 'hidden';
    for (const t of labelLines(g, 'grad ')) t.style.visibility = bwdDone.has(n) ? 'visible' : 'hidden';
  }
  $('step-count').textContent = `step ${s.step} of ${total}`;
  const info = $('step-info');
  if (s.step === 0) {
    info.textContent = 'Nothing computed yet. Step forward: each node\'s value from its inputs; then backward: each node\'s adjoint d loss / d node from its consumers, starting with 1 at the loss.';
    return { index: 0, phase: 'start' };
  }
  if (s.step <= F) {
    const f = st.forward[s.step - 1]!;
    mark(s.stepGroups.get(st.ids.get(f.node) ?? ''), 'current');
    info.textContent = `forward ${s.step}/${F}: ${describeNode(f.node)}\nvalue = ${brief(f.value, 8)}`;
    return { index: s.step, phase: 'forward', node: f.label, value: brief(f.value, 8) };
  }
  const b = st.backward[s.step - F - 1]!;
  mark(s.stepGroups.get(st.ids.get(b.node) ?? ''), 'current');
  const from = b.from.map((c) => c.op);
  const parts = b.contributions?.map((c) => `\n  from ${c.from.op}: ${brief(c.value, 6)}`).join('') ?? '';
  info.textContent = `backward ${s.step - F}/${st.backward.length}: ${describeNode(b.node)}\nvalue   = ${brief(b.value, 8)}\nadjoint = ${brief(b.adjoint, 8)}\n` +
    (from.length === 0 ? 'the loss itself: its adjoint is 1' : `the sum of what its consumers' gradient rules send back: ${from.join(', ')}${parts}`);
  return { index: s.step, phase: 'backward', node: b.label, value: brief(b.value, 8), adjoint: brief(b.adjoint, 8), from };
}

async function showStepThrough(s: State): Promise<void> {
  s.stepGroups = await draw($('step-graph'), s.steps.dot);
  clickable(s.stepGroups, s.steps.ids);
  showStep(s, 0);
  const c = s.steps.check;
  const check = $('check');
  const forward = s.steps.mode === 'forward';
  document.querySelector<HTMLButtonElement>('#tabs button[data-tab="reverse"]')!.textContent = forward ? 'Forward mode' : 'Reverse mode';
  check.textContent = forward
    ? (c.ok ? 'forward mode (jvp) and reverse mode (<gradient, v>) agree with central differences along the direction (float32: rel 1e-2, eps 1e-3)' : `forward mode check failed: ${c.ok ? '' : c.message}`)
    : c.ok ? 'verify_grad: the symbolic gradient agrees with finite differences (float32 tolerances: abs or rel 1e-2, eps 3e-4)' : `verify_grad failed: ${c.message}`;
  check.classList.toggle('error', !c.ok);
  const body = $('fd-table').querySelector('tbody')!;
  body.replaceChildren();
  for (const t of s.steps.table) {
    t.analytic.slice(0, 6).forEach((an, j) => {
      const tr = document.createElement('tr');
      for (const v of [forward ? t.name : `${t.name}[${j}]`, an.toFixed(6), t.numeric[j]!.toFixed(6), Math.abs(an - t.numeric[j]!).toExponential(2)]) {
        const td = document.createElement('td');
        td.textContent = v;
        tr.append(td);
      }
      body.append(tr);
    });
  }
}

/** The Profile tab: a bar per kernel (total time over the calls), then the printed table. */
function showProfile(s: State): void {
  if (s.device === 'webgpu') {
    $('profile-note').textContent = 'not profiled on gpu:webgpu in a page (a profiled call is synchronous; a page awaits WebGPU)';
    $('profile-bars').replaceChildren();
    $('profile-table').textContent = '';
    return;
  }
  const p = s.fn.profile();
  $('profile-note').textContent = `${p.calls} calls on ${p.target}${p.note !== undefined ? `: ${p.note}` : ''}`;
  const bars = $('profile-bars');
  bars.replaceChildren(...profileBars(p).map((b) => {
    const row = document.createElement('div');
    row.className = 'row';
    row.title = b.kCalls;
    const name = document.createElement('span');
    name.textContent = b.name;
    const bar = document.createElement('div');
    bar.className = 'bar';
    bar.style.width = `${(100 * b.width).toFixed(1)}%`;
    const ms = document.createElement('span');
    ms.textContent = `${b.ms.toFixed(3)} ms`;
    row.append(name, bar, ms);
    return row;
  }));
  $('profile-table').textContent = s.fn.profile({ format: 'table' });
}

function showNumbers(s: State): void {
  const r = s.result;
  const rows = ['loss', ...s.analysis.wrt.map((i) => `d loss / d ${s.analysis.names[i]}`)];
  const body = $('numbers-table').querySelector('tbody')!;
  body.replaceChildren();
  rows.forEach((name, i) => {
    const diff = Math.max(0, ...r.numbers[i]!.map((x, j) => Math.abs(x - r.reference[i]![j]!)));
    const tr = document.createElement('tr');
    for (const v of [name, brief(toND(r.numbers[i]!), 4), brief(toND(r.reference[i]!), 4), diff.toExponential(2)]) {
      const td = document.createElement('td');
      td.textContent = v;
      tr.append(td);
    }
    body.append(tr);
  });
  $('numbers-device').textContent = `compiled on ${r.device} against the reference interpreter`;
}

function toND(xs: readonly number[]) {
  return { data: Float64Array.from(xs), shape: [xs.length] } as unknown as Parameters<typeof brief>[0];
}

/** Runs the editor's program: analysis, compiled function on `device`, kernels, step-through. */
async function run(device: ViewerDevice): Promise<State['result']> {
  setStatus('running…');
  ($('device') as HTMLSelectElement).value = device;
  editor.dispatch({ effects: setLine.of(undefined) });
  try {
    const t0 = performance.now();
    const analysis = analyze(runProgram(editor.state.doc.toString()), undefined, ($('optimizer') as HTMLSelectElement).value as ViewerLevel);
    // gpu (WebGPU): the gpu device's webgpu mode on the page's navigator.gpu; its calls are awaited (a page cannot block)
    setEnvironment({ THEANINE_GPU_MODE: device === 'webgpu' ? 'webgpu' : undefined });
    // (a profiled function's calls are synchronous, which a page's WebGPU cannot be: no Profile tab there)
    const fn = compile(analysis, device === 'cpu' ? 'cpu' : 'gpu', undefined, device !== 'webgpu');
    const got = device === 'webgpu' ? await numbersAsync(fn, analysis) : numbers(fn, analysis);
    // the Profile tab: four more calls, the first (compiling) call's kernel times left out
    if (device !== 'webgpu') {
      fn.profile({ reset: true });
      for (let i = 0; i < 4; i++) fn(analysis.values);
    }
    const cpu = device === 'cpu' ? got : numbers(compile(analysis, 'cpu'), analysis);
    const kernels = kernelsOf(fn.source(), fn.graph);
    const steps = stepThrough(analysis);
    const result = { device: fn.device, numbers: got, cpu, reference: referenceNumbers(analysis) };
    state = { analysis, device, fn, kernels, steps, step: 0, stepGroups: new Map(), result };
    await showGraph(analysis);
    await showPasses(analysis);
    await showKernels(state);
    await showStepThrough(state);
    showNumbers(state);
    showProfile(state);
    setStatus(`${analysis.names.length} inputs, loss ${brief(toND(got[0]!))} on ${fn.device}; ${analysis.passes.length} passes, ${kernels.length} kernels (${(performance.now() - t0).toFixed(0)} ms)`);
    document.body.dataset['ready'] = String(Number(document.body.dataset['ready'] ?? '0') + 1);
    return result;
  } catch (e) {
    setStatus(e instanceof Error ? e.message : String(e), true);
    throw e;
  }
}

function load(name: ViewerExample): void {
  if (!(name in VIEWER_EXAMPLES)) throw new Error(`viewer: no example ${JSON.stringify(name)}; examples: ${VIEWER_EXAMPLE_NAMES.join(', ')}`);
  ($('example') as HTMLSelectElement).value = name;
  setCode(VIEWER_EXAMPLES[name]);
}

// Controls.
const select = $('example') as HTMLSelectElement;
for (const n of VIEWER_EXAMPLE_NAMES) select.append(new Option(n, n));
select.addEventListener('change', () => { load(select.value as ViewerExample); void run(($('device') as HTMLSelectElement).value as ViewerDevice).catch(() => undefined); });
$('run').addEventListener('click', () => void run(($('device') as HTMLSelectElement).value as ViewerDevice).catch(() => undefined));
for (const b of document.querySelectorAll<HTMLButtonElement>('#tabs button')) b.addEventListener('click', () => tab(b.dataset['tab']!));
$('step-back').addEventListener('click', () => { if (state !== undefined) showStep(state, state.step - 1); });
$('step-next').addEventListener('click', () => { if (state !== undefined) showStep(state, state.step + 1); });
$('step-end').addEventListener('click', () => { if (state !== undefined) showStep(state, totalSteps(state.steps)); });
$('step-start').addEventListener('click', () => { if (state !== undefined) showStep(state, 0); });

/** What tests and scripts drive (the page's own controls do the same). */
const api = {
  examples: VIEWER_EXAMPLE_NAMES,
  load,
  run,
  tab,
  setCode,
  steps: () => (state === undefined ? 0 : totalSteps(state.steps)),
  step: (k: number) => { if (state === undefined) throw new Error('viewer: run a program first'); return showStep(state, k); },
  check: () => state?.steps.check,
  kernels: () => state?.kernels.map((k) => ({ name: k.name, label: k.label, node: k.node === undefined ? undefined : describeNode(k.node) })),
  /** Clicks the k-th kernel of the list (as a user would) and returns the highlighted program line's text. */
  pickKernel: (k: number) => {
    tab('kernels');
    document.querySelectorAll<HTMLElement>('#kernel-list li')[k]?.click();
    return { line: document.querySelector('.cm-built-here')?.textContent ?? undefined, selected: $('selected').textContent };
  },
  /** How many elements of the page match `selector` (tests count highlighted nodes with it). */
  count: (selector: string) => document.querySelectorAll(selector).length,
  profile: () => (state?.device === 'webgpu' ? undefined : state?.fn.profile()),
  passes: () => state?.analysis.passes.map((p) => ({ name: p.name, nodesBefore: p.nodesBefore, nodesAfter: p.nodesAfter, changed: p.added.length })),
};
(globalThis as unknown as { theanineViewer: typeof api }).theanineViewer = api;

// An address naming an example (#lstm) opens it, also when only the part after # changes.
window.addEventListener('hashchange', () => {
  const name = decodeURIComponent(location.hash.slice(1));
  if ((VIEWER_EXAMPLE_NAMES as readonly string[]).includes(name)) {
    load(name as ViewerExample);
    void run(($('device') as HTMLSelectElement).value as ViewerDevice).catch(() => undefined);
  }
});

// Start: the file `theanine viz <file>` serves, else the example named in the address (#lstm), else the first.
async function start(): Promise<void> {
  const fromHash = decodeURIComponent(location.hash.slice(1));
  let code: string | undefined;
  try {
    const r = await fetch('program.js');
    if (r.ok) code = await r.text();
  } catch { /* a static site has no program.js */ }
  if (code !== undefined) setCode(code);
  else load((VIEWER_EXAMPLE_NAMES as readonly string[]).includes(fromHash) ? fromHash as ViewerExample : VIEWER_EXAMPLE_NAMES[0]!);
  tab('graph');
  await run('cpu').catch(() => undefined);
}
void start();
