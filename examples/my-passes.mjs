// User passes for `npx theanine passes mlp-gradient --require examples/my-passes.mjs` (the README's
// tour). A file loaded with --require imports the package as any user module does ('theanine'
// resolves to this package's build, dist/, by Node's self-reference), so it shares the CLI's
// pass registry; { global: true } adds the pass to every pipeline from then on.
import { definePass } from 'theanine';

// exp(log(x)) -> x. A rewrite returns the replacement node, or null to leave the node alone.
definePass('exp_of_log', (n) => (n.op === 'exp' && n.inputs[0].op === 'log' ? n.inputs[0].inputs[0] : null), {
  global: true,
  doc: 'exp(log(x)) -> x (a user pass from examples/my-passes.mjs)',
});

// log(exp(x)) -> x, the other direction.
definePass('log_of_exp', (n) => (n.op === 'log' && n.inputs[0].op === 'exp' ? n.inputs[0].inputs[0] : null), {
  global: true,
  doc: 'log(exp(x)) -> x (a user pass from examples/my-passes.mjs)',
});
