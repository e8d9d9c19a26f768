// Every JavaScript or TypeScript block in the docs (README.md, docs/**/*.md, web/README.md)
// type-checks, strictly, against the embed SDK as built (dist/sdk/*.d.ts), the way an
// integrator's editor checks a copied example. sdk/js/README.md has its own test
// (sdk/js/test/readme.test.mjs), against the npm package.
//
// A block imports the SDK from the gateway (https://<gateway>/sdk/splathost-embed.js); the test
// maps that URL to the built file. A block that is a fragment (it uses values its page builds
// elsewhere: a mounted viewer, a session token, a file, a progress bar) is marked ```js fragment, and only the
// names in FRAGMENT_NAMES are declared for it; any other unknown name fails, as would a wrong
// method, option or event.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const web = join(dirname(fileURLToPath(import.meta.url)), '..');
const root = join(web, '..');
const sdkDir = join(web, 'dist', 'sdk');

/** What a fragment may use without defining it, with the type the page would give it. */
const sdkTypes = `import(${JSON.stringify(join(sdkDir, 'splathost-embed.js'))})`;
const FRAGMENT_NAMES = {
  viewer: `${sdkTypes}.ViewerHandle`,
  editor: `${sdkTypes}.EditorHandle`,
  sessionToken: 'string',
  newToken: 'string',
  EDITOR_SESSION: 'string',
  file: 'File',
  bar: 'HTMLProgressElement',
};

/** The markdown files whose blocks are checked. */
function docs() {
  const out = [join(root, 'README.md'), join(web, 'README.md')];
  const walk = (dir) => {
    for (const name of readdirSync(dir)) {
      const p = join(dir, name);
      if (statSync(p).isDirectory()) walk(p);
      else if (name.endsWith('.md')) out.push(p);
    }
  };
  walk(join(root, 'docs'));
  return out;
}

/** The js/ts blocks of a markdown file: their code, whether they are marked fragment, and where. */
function blocksOf(file) {
  const text = readFileSync(file, 'utf8');
  return [...text.matchAll(/^```(js|ts|javascript|typescript)( fragment)?\n([\s\S]*?)^```/gm)].map((m) => ({
    lang: m[1],
    code: m[3],
    fragment: Boolean(m[2]),
    where: `${relative(root, file)}:${text.slice(0, m.index).split('\n').length}`,
  }));
}

/** The type errors of blocks, each written to dir as a module of its own with the SDK's URL
 * mapped to the built file and a fragment's names declared (JSDoc-typed in a .js block). */
function problemsOf(blocks, dir, js) {
  const files = blocks.map((b, i) => {
    const code = b.code.replace(/(['"])https?:\/\/[^'"]*\/sdk\/(splathost-[a-z]+)\.js\1/g,
      (_, q, name) => `${q}${join(sdkDir, name)}.js${q}`);
    const prelude = !b.fragment ? '' : Object.entries(FRAGMENT_NAMES)
      // Only the names the block uses and does not define itself.
      .filter(([n]) => new RegExp(`\\b${n}\\b`).test(b.code) && !new RegExp(`\\b(const|let|var)\\s+${n}\\b`).test(b.code))
      .map(([n, type]) => (js ? `/** @type {${type}} */\nconst ${n} = /** @type {any} */ (null);\n` : `declare const ${n}: ${type};\n`))
      .join('');
    const f = join(dir, `block${i}.${js ? 'js' : 'ts'}`);
    // export {} keeps each block a module of its own, as a page's <script type="module"> is.
    writeFileSync(f, `${prelude}${code}\nexport {};\n`);
    return f;
  });
  const program = ts.createProgram(files, {
    // A .js block is checked as an integrator's editor checks JavaScript: every name, method,
    // option and event payload, but DOM lookups are not required to handle null.
    strict: true, strictNullChecks: !js, allowJs: js, checkJs: js, noEmit: true,
    target: ts.ScriptTarget.ES2022, module: ts.ModuleKind.ESNext, moduleResolution: ts.ModuleResolutionKind.Bundler,
    lib: ['lib.es2022.d.ts', 'lib.dom.d.ts'], skipLibCheck: true,
  });
  return ts.getPreEmitDiagnostics(program).map((d) => {
    const i = files.indexOf(d.file?.fileName);
    return `${i >= 0 ? blocks[i].where : d.file?.fileName}: ${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`;
  });
}

test('every js/ts block of the docs type-checks against the embed SDK', () => {
  const blocks = docs().flatMap(blocksOf);
  assert.ok(blocks.length >= 3, `the docs' blocks were found (${blocks.length})`);
  const dir = mkdtempSync(join(tmpdir(), 'splathost-doc-blocks-'));
  try {
    const js = blocks.filter((b) => b.lang === 'js' || b.lang === 'javascript');
    const other = blocks.filter((b) => !js.includes(b));
    mkdirSync(join(dir, 'js'));
    mkdirSync(join(dir, 'ts'));
    const problems = [...problemsOf(js, join(dir, 'js'), true), ...problemsOf(other, join(dir, 'ts'), false)];
    assert.deepEqual(problems, [], `doc blocks that do not type-check:\n${problems.join('\n')}`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
