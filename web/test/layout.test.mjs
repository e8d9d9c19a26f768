// The shape of the browser code (issue 30): no TypeScript file under web/*/src over 450 lines,
// no import cycle among them, and no module-level mutable state in the editor's modules. A cycle
// lets modules see each other half-initialised and hides which one owns what; a long file is
// where module-level state piles up. Every import counts: static, type-only, re-exports and
// dynamic import() (a lazily loaded engine that imports its loader back is still a cycle).
// TypeScript's own scanner finds them, so comments and strings that look like imports do not.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const MAX_LINES = 450;
const web = join(dirname(fileURLToPath(import.meta.url)), '..');

/** Every .ts file under web/<package>/src, absolute. */
function sources() {
  const out = [];
  const walk = (dir) => {
    for (const name of readdirSync(dir)) {
      const p = join(dir, name);
      if (statSync(p).isDirectory()) walk(p);
      else if (name.endsWith('.ts')) out.push(p);
    }
  };
  for (const pkg of readdirSync(web)) {
    const src = join(web, pkg, 'src');
    if (pkg !== 'node_modules' && statSync(join(web, pkg)).isDirectory() && statSync(src, { throwIfNoEntry: false })?.isDirectory()) walk(src);
  }
  return out.sort();
}

/** The relative imports of a file, resolved to the source files they name (packages are left
 * out: they are not ours to order). */
function importsOf(file, known) {
  const { importedFiles } = ts.preProcessFile(readFileSync(file, 'utf8'), true, true);
  const out = [];
  for (const { fileName } of importedFiles) {
    if (!fileName.startsWith('.')) continue;
    const base = resolve(dirname(file), fileName);
    // The npm package's shared modules (sdk/js/src, bundled in) import nothing of web/: they
    // can close no cycle here.
    if (relative(web, base).startsWith('..')) continue;
    const hit = [base, base + '.ts', join(base, 'index.ts')].find((p) => known.has(p));
    assert.ok(hit, `${relative(web, file)} imports ${fileName}, which is no source file under web/*/src`);
    out.push(hit);
  }
  return out;
}

/** The cycles of the graph found by a depth-first walk: each edge back to a file on the walk's
 * path, as the path it closes. */
function cycles(graph) {
  const state = new Map(); // undefined: not seen; 1: on the path; 2: done
  const path = [];
  const found = [];
  const visit = (n) => {
    state.set(n, 1);
    path.push(n);
    for (const m of graph.get(n)) {
      if (state.get(m) === 1) found.push([...path.slice(path.indexOf(m)), m]);
      else if (!state.has(m)) visit(m);
    }
    path.pop();
    state.set(n, 2);
  };
  for (const n of graph.keys()) if (!state.has(n)) visit(n);
  return found;
}

const files = sources();

test('the browser sources are found', () => {
  // Guards the checks below against passing on an empty or misplaced tree.
  assert.ok(files.some((f) => f.endsWith(join('embed', 'src', 'editor.ts'))), 'web/embed/src/editor.ts');
  assert.ok(files.some((f) => f.endsWith(join('sdk', 'src', 'index.ts'))), 'web/sdk/src/index.ts');
});

test(`no TypeScript file under web/*/src is over ${MAX_LINES} lines`, () => {
  const long = [];
  for (const f of files) {
    const text = readFileSync(f, 'utf8');
    const lines = text.split('\n').length - (text.endsWith('\n') ? 1 : 0);
    if (lines > MAX_LINES) long.push(`${relative(web, f)}: ${lines} lines`);
  }
  assert.deepEqual(long, [], `split these files by concern:\n${long.join('\n')}`);
});

test('the imports among web/*/src have no cycle', () => {
  const known = new Set(files);
  const graph = new Map(files.map((f) => [f, importsOf(f, known)]));
  const found = cycles(graph).map((c) => c.map((f) => relative(web, f)).join(' -> '));
  assert.deepEqual(found, [], `import cycles:\n${found.join('\n')}`);
});

// The editor's modules share its state through the one EditorState the editor owns
// (web/README.md, "Source layout"): a module-level `let` or `var` in them would be state beside it.
test('the editor modules keep no mutable state at module level', () => {
  const editor = join(web, 'embed', 'src', 'editor');
  const found = [];
  for (const f of files.filter((f) => f.startsWith(editor + '/') || f === editor + '.ts')) {
    const sf = ts.createSourceFile(f, readFileSync(f, 'utf8'), ts.ScriptTarget.Latest);
    for (const st of sf.statements) {
      if (ts.isVariableStatement(st) && !(st.declarationList.flags & ts.NodeFlags.Const)) {
        found.push(`${relative(web, f)}:${sf.getLineAndCharacterOfPosition(st.getStart(sf)).line + 1}`);
      }
    }
  }
  assert.deepEqual(found, [], `module-level let/var:\n${found.join('\n')}`);
});

test('the cycle finder finds a cycle, a self-import and none in a tree', () => {
  const g = (edges) => new Map(Object.entries(edges));
  assert.deepEqual(cycles(g({ a: ['b'], b: ['c'], c: ['a'] })), [['a', 'b', 'c', 'a']]);
  assert.deepEqual(cycles(g({ a: ['a'] })), [['a', 'a']]);
  assert.deepEqual(cycles(g({ a: ['b', 'c'], b: ['c'], c: [] })), []);
});
