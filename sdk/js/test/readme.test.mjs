// The README's JavaScript blocks type-check against the built package (dist/*.d.ts), as an
// integrator's editor would check them after `npm install`: each block is a module importing
// '@splathost/sdk'. Blocks are fragments of one program: a block that uses a name an earlier block
// defines (client, file, fileUrl, orderId) without defining it gets it declared before it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const pkg = join(dirname(fileURLToPath(import.meta.url)), '..');
const web = join(pkg, '..', '..', 'web', 'node_modules');
const ts = createRequire(join(web, 'noop.js'))('typescript');

const FRAGMENT_NAMES = {
  client: `new (await import('@splathost/sdk')).Splathost({ baseUrl: 'http://127.0.0.1:8080' })`,
  file: 'new Blob([])',
  fileUrl: "''",
  orderId: "''",
};

/** The declarations a fragment needs: the names it uses and does not define. */
function prelude(block) {
  return Object.entries(FRAGMENT_NAMES)
    .filter(([name]) => new RegExp(`\\b${name}\\b`).test(block) && !new RegExp(`\\b(const|let)\\s+${name}\\b`).test(block))
    .map(([name, value]) => `const ${name} = ${value};\n`).join('');
}

test('every js block of README.md type-checks against the package', () => {
  const readme = readFileSync(join(pkg, 'README.md'), 'utf8');
  const blocks = [...readme.matchAll(/^```js\n([\s\S]*?)^```/gm)].map((m) => m[1]);
  assert.ok(blocks.length >= 5, `the README's js blocks were found (${blocks.length})`);
  const dir = mkdtempSync(join(tmpdir(), 'splathost-sdk-readme-'));
  try {
    mkdirSync(join(dir, 'node_modules', '@splathost'), { recursive: true });
    symlinkSync(pkg, join(dir, 'node_modules', '@splathost', 'sdk'));
    writeFileSync(join(dir, 'package.json'), '{"type":"module"}');
    const files = blocks.map((b, i) => {
      const f = join(dir, `block-${i}.mjs`);
      writeFileSync(f, prelude(b) + b + '\nexport {};\n');
      return f;
    });
    const program = ts.createProgram(files, {
      allowJs: true, checkJs: true, noEmit: true, strict: true, target: ts.ScriptTarget.ES2022,
      module: ts.ModuleKind.NodeNext, moduleResolution: ts.ModuleResolutionKind.NodeNext,
      typeRoots: [join(web, '@types')], types: ['node'], skipLibCheck: true,
    });
    const problems = ts.getPreEmitDiagnostics(program).map((d) =>
      `${d.file ? d.file.fileName.slice(dir.length + 1) : ''}: ${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`);
    assert.deepEqual(problems, []);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
