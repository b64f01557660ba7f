// The TypeScript side of exporting: ts-morph (loaded on first use; it carries a whole
// TypeScript compiler) builds and formats the module, the compiler's parser marks element
// reads non-null (so the module type-checks under noUncheckedIndexedAccess too), and the
// compiler's checker must find no error before anything is written.
import type * as TsMorph from 'ts-morph';
import { platform } from '#platform';

let tsMorph: typeof TsMorph | undefined;

/** ts-morph, required synchronously on first use (export is synchronous, as everything in K is). */
export function loadTsMorph(): typeof TsMorph {
  if (tsMorph === undefined) {
    try {
      tsMorph = platform.requireModule('ts-morph') as typeof TsMorph;
    } catch (e) {
      // An optional peer dependency (only export needs it); one line, without Node's require stack.
      throw new Error(
        `exportModule needs the optional package ts-morph; ${platform.installHint('ts-morph')} (${(e as Error).message.split('\n')[0]})`,
      );
    }
  }
  return tsMorph;
}

/**
 * The compiler options an export must pass: strict, and the stricter checks projects commonly
 * add, so the module can be dropped into any of them.
 */
export function checkOptions(tm: typeof TsMorph): TsMorph.CompilerOptions {
  const { ts } = tm;
  return {
    strict: true,
    noUncheckedIndexedAccess: true,
    exactOptionalPropertyTypes: true,
    noImplicitReturns: true,
    noImplicitOverride: true,
    noFallthroughCasesInSwitch: true,
    noUnusedLocals: true,
    noUnusedParameters: true,
    noPropertyAccessFromIndexSignature: true,
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.ESNext,
    moduleResolution: ts.ModuleResolutionKind.Bundler,
    lib: ['lib.es2022.d.ts'],
    types: [],
    noEmit: true,
    // The standard library's own declarations need no checking: only the module is in question.
    skipLibCheck: true,
  };
}

/**
 * Adds `!` after every element read (`a[i]` that is not the target of a plain `=`): typed-array
 * reads are in bounds by construction, and noUncheckedIndexedAccess would otherwise type them
 * `number | undefined`. Uses the compiler's own parser, so strings and comments are never touched.
 */
export function markElementReadsNonNull(tm: typeof TsMorph, text: string): string {
  const { ts } = tm;
  const sf = ts.createSourceFile('m.ts', text, ts.ScriptTarget.ES2022, true, ts.ScriptKind.TS);
  const at: number[] = [];
  const visit = (n: TsMorph.ts.Node): void => {
    if (ts.isElementAccessExpression(n)) {
      const p = n.parent;
      const written = ts.isBinaryExpression(p) && p.left === n && p.operatorToken.kind === ts.SyntaxKind.EqualsToken;
      if (!written && !ts.isNonNullExpression(p)) at.push(n.getEnd());
    }
    ts.forEachChild(n, visit);
  };
  visit(sf);
  at.sort((a, b) => b - a);
  let out = text;
  for (const pos of at) out = `${out.slice(0, pos)}!${out.slice(pos)}`;
  return out;
}

let checker: TsMorph.Project | undefined;

/**
 * Prints `statements` as a source file, marks element reads non-null, formats it, and
 * type-checks it with the export options (one project per process: the standard library is
 * parsed once). Returns the text and the formatted errors ('' when none).
 */
export function buildAndCheck(
  tm: typeof TsMorph,
  path: string,
  statements: (string | TsMorph.StatementStructures)[],
  ambient?: string,
): { source: string; errors: string } {
  checker ??= new tm.Project({ useInMemoryFileSystem: true, compilerOptions: checkOptions(tm) });
  const project = checker;
  const sf = project.createSourceFile(path, { statements }, { overwrite: true });
  const extra =
    ambient === undefined ? undefined : project.createSourceFile('/__ambient__.d.ts', ambient, { overwrite: true });
  try {
    sf.replaceWithText(markElementReadsNonNull(tm, sf.getFullText()));
    sf.formatText({ indentSize: 2, convertTabsToSpaces: true, ensureNewLineAtEndOfFile: true });
    const source = sf.getFullText();
    const diags = project.getPreEmitDiagnostics();
    const errors =
      diags.length === 0 ? '' : project.formatDiagnosticsWithColorAndContext(diags).replace(/\u001b\[[0-9;]*m/g, '');
    return { source, errors };
  } finally {
    project.removeSourceFile(sf);
    if (extra !== undefined) project.removeSourceFile(extra);
  }
}

/**
 * An expression re-printed by the compiler's printer: function sources taken from a minified
 * build (as tsx and bundlers make them) come out one statement per line.
 */
export function reprint(tm: typeof TsMorph, expr: string): string {
  const { ts } = tm;
  const sf = ts.createSourceFile('e.ts', `(${expr});`, ts.ScriptTarget.ES2022, true, ts.ScriptKind.TS);
  const st = sf.statements[0];
  if (
    sf.statements.length !== 1 ||
    st === undefined ||
    !ts.isExpressionStatement(st) ||
    !ts.isParenthesizedExpression(st.expression)
  )
    return expr;
  // Positions forgotten, the printer lays the code out itself (it would keep the source's one line).
  const forget = (n: TsMorph.ts.Node): void => {
    ts.forEachChild(n, forget);
    (n as { pos: number }).pos = -1;
    (n as { end: number }).end = -1;
    if (ts.isBlock(n)) (n as { multiLine?: boolean }).multiLine = true;
  };
  const e = st.expression.expression;
  forget(e);
  return ts.createPrinter().printNode(ts.EmitHint.Expression, e, sf);
}
