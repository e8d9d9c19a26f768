// Builds web/dist for the gateway: the embed bundles into dist/embed/assets, the SDK into
// dist/sdk, after typechecking, and the API reference page into dist/docs. `node build.mjs sdk`
// builds only the SDK's module, without the typecheck (npm test's quick pre-step). The webhook
// verifier is the npm package's (sdk/js): its build (tsc) is part of both.
import { build } from 'esbuild';
import { execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { brotliCompressSync, constants as zlib, gzipSync } from 'node:zlib';
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
    // The engines are entry points of their own, so their names are stable: the pages
    // modulepreload PlayCanvas's by name (services/session/pages.go), and the stages' dynamic
    // import of an engine loads that same file.
    entryPoints: {
      boot: join(root, 'embed', 'src', 'boot.ts'),
      viewer: join(root, 'embed', 'src', 'viewer.ts'),
      editor: join(root, 'embed', 'src', 'editor.ts'),
      embed: join(root, 'embed', 'src', 'embed.css'),
      'engine-playcanvas': join(root, 'embed', 'src', 'engine-playcanvas.ts'),
      'engine-spark': join(root, 'embed', 'src', 'engine-spark.ts'),
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

// What the gateway serves compressed: text and wasm. Source maps stay as they are (only
// developer tools fetch them, and brotli at its best setting is seconds on megabytes of them).
const COMPRESSIBLE = /\.(js|mjs|css|html|json|ts|svg|wasm|txt|yaml)$/;
// Below this, a compressed copy saves less than a packet.
const MIN_COMPRESS_BYTES = 1024;

/**
 * Writes a .br and a .gz beside every compressible file under dir (best settings: this runs once
 * per build, and the gateway sends the copies as they are, never compressing per request). A
 * copy no smaller than its file is not written, and copies whose file is gone or older are
 * removed first, so a partial rebuild (`node build.mjs sdk`) never leaves a stale one served.
 */
function precompress(dir) {
  if (!existsSync(dir)) return;
  for (const entry of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (!entry.isFile() || !/\.(br|gz)$/.test(entry.name)) continue;
    const copy = join(entry.parentPath, entry.name);
    const base = copy.slice(0, -3);
    if (!existsSync(base) || statSync(base).mtimeMs > statSync(copy).mtimeMs) rmSync(copy);
  }
  for (const entry of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (!entry.isFile() || !COMPRESSIBLE.test(entry.name)) continue;
    const file = join(entry.parentPath, entry.name);
    const body = readFileSync(file);
    if (body.length < MIN_COMPRESS_BYTES) continue;
    const copies = {
      '.gz': () => gzipSync(body, { level: 9 }),
      '.br': () => brotliCompressSync(body, {
        params: { [zlib.BROTLI_PARAM_QUALITY]: 11, [zlib.BROTLI_PARAM_SIZE_HINT]: body.length },
      }),
    };
    for (const [suffix, compress] of Object.entries(copies)) {
      if (existsSync(file + suffix)) continue;
      const out = compress();
      if (out.length < body.length) writeFileSync(file + suffix, out);
    }
  }
}

process.on('uncaughtException', (err) => {
  console.error(`build failed: ${err.message.split('\n')[0]}`);
  process.exit(1);
});

if (sdkOnly) {
  buildPackage();
  await buildSdk();
  await buildWebhook();
  precompress(join(dist, 'sdk'));
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
  for (const dir of ['sdk', 'embed', 'docs']) precompress(join(dist, dir));
}
