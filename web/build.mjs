// Builds web/dist for the gateway: the embed bundles into dist/embed/assets, the SDK into
// dist/sdk, after typechecking, and the API reference page into dist/docs. `node build.mjs sdk`
// builds only the SDK's module, without the typecheck (npm test's quick pre-step). The webhook
// verifier is the npm package's (sdk/js): its build (tsc) is part of both.
import { build } from 'esbuild';
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildDocs } from './docs/build.mjs';
import { buildPackage } from '../sdk/js/build.mjs';

const root = dirname(fileURLToPath(import.meta.url));
const dist = join(root, 'dist');
const sdkOnly = process.argv[2] === 'sdk';
const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc');

const common = {
  bundle: true,
  format: 'esm',
  platform: 'browser',
  target: ['es2022'],
  legalComments: 'linked',
  logLevel: 'warning',
};

async function buildSdk() {
  await build({
    ...common,
    entryPoints: [join(root, 'sdk', 'src', 'index.ts')],
    outfile: join(dist, 'sdk', 'splathost-embed.js'),
    sourcemap: true,
  });
}

// The webhook verifier, served at /sdk/splathost-webhook.js, is the npm package's module
// (sdk/js/src/webhook.ts, WebCrypto only): one implementation for both.
async function buildWebhook() {
  await build({
    ...common,
    entryPoints: [join(root, '..', 'sdk', 'js', 'src', 'webhook.ts')],
    outfile: join(dist, 'sdk', 'splathost-webhook.js'),
    sourcemap: true,
  });
}

// The SDK's types as one .d.ts, emitted by tsc (which typechecks it on the way): index.d.ts with
// each `export * from './part.ts'` replaced by that part's declarations, as when the SDK was one
// file, so an integrator's copy of splathost-embed.d.ts stands alone.
function sdkTypes() {
  const out = mkdtempSync(join(tmpdir(), 'splathost-sdk-dts-'));
  try {
    // The uploader imports the npm package's transfer module (sdk/js/src), so the emitted tree is
    // rooted at the repository: the SDK's declarations land in out/web/sdk/src.
    execFileSync(process.execPath, [tsc, '-p', join(root, 'sdk'), '--noEmit', 'false', '--declaration',
      '--emitDeclarationOnly', '--allowImportingTsExtensions', 'false', '--rewriteRelativeImportExtensions',
      '--rootDir', join(root, '..'), '--outDir', out], { stdio: 'inherit' });
    writeFileSync(join(dist, 'sdk', 'splathost-embed.d.ts'), inlineParts(join(out, 'web', 'sdk', 'src'), 'index.d.ts'));
    copyFileSync(join(root, '..', 'sdk', 'js', 'dist', 'webhook.d.ts'), join(dist, 'sdk', 'splathost-webhook.d.ts'));
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
}

function inlineParts(dir, file) {
  const text = readFileSync(join(dir, file), 'utf8').replace(/^export \* from '\.\/([\w-]+)\.ts';\n/gm, (_, part) =>
    readFileSync(join(dir, `${part}.d.ts`), 'utf8').replace(/^import [^;]* from '\.\/[\w-]+\.ts';\n/gm, ''));
  if (/from '\./.test(text)) throw new Error(`${file}: a relative import is left after inlining the SDK's parts`);
  return text;
}

async function buildEmbeds() {
  execFileSync(process.execPath, [tsc, '--noEmit', '-p', join(root, 'embed')], { stdio: 'inherit' });
  await build({
    ...common,
    entryPoints: {
      viewer: join(root, 'embed', 'src', 'viewer.ts'),
      editor: join(root, 'embed', 'src', 'editor.ts'),
      embed: join(root, 'embed', 'src', 'embed.css'),
    },
    outdir: join(dist, 'embed', 'assets'),
    // Each engine is a dynamic import, so a page loads only the engine its scene needs.
    splitting: true,
    chunkNames: 'chunks/[name]-[hash]',
    minify: true,
    sourcemap: 'linked',
    // Spark inlines its wasm and worker as data URLs already; anything else binary is inlined
    // too, so nothing is fetched from another host.
    loader: { '.wasm': 'binary' },
  });
}

process.on('uncaughtException', (err) => {
  console.error(`build failed: ${err.message.split('\n')[0]}`);
  process.exit(1);
});

if (sdkOnly) {
  buildPackage();
  await buildSdk();
  await buildWebhook();
} else {
  rmSync(join(dist, 'sdk'), { recursive: true, force: true });
  rmSync(join(dist, 'embed'), { recursive: true, force: true });
  mkdirSync(join(dist, 'sdk'), { recursive: true });
  buildPackage();
  await buildSdk();
  await buildWebhook();
  sdkTypes();
  await buildEmbeds();
  buildDocs(dist);
}
