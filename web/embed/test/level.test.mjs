// Unit tests of the embeds' pure parts: the levelData v1 reader, the orientation and bounds
// geometry (geometry.ts), scene sources (engine.ts) and the stage's colour parsing. esbuild
// bundles the TypeScript sources for node (the engines' dynamic imports are left out: nothing
// here renders).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { build } from 'esbuild';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const src = join(dirname(fileURLToPath(import.meta.url)), '..', 'src');

async function load(entry) {
  const dir = await mkdtemp(join(tmpdir(), 'splathost-embed-test-'));
  try {
    const out = join(dir, 'bundle.mjs');
    await build({
      entryPoints: [join(src, entry)], outfile: out, bundle: true, format: 'esm', platform: 'neutral',
      // The engines load by dynamic import only when a scene is shown: never here.
      external: ['./engine-*'], logLevel: 'error',
    });
    return await import(pathToFileURL(out).href);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

const level = await load('level.ts');
const stage = await load('stage.ts');
const geometry = await load('geometry.ts');
const engine = await load('engine.ts');

test('readLevel keeps a valid levelData v1 as it is', () => {
  const raw = {
    version: 1,
    camera: { position: [1, 2, 3], target: [0, 0, 0], fov: 50 },
    annotations: [
      { id: 'a-1', position: [1, 1, 1], title: 'One', text: 'first', camera: { position: [0, 1, 2], target: [1, 1, 1] } },
      { id: 'b_2', position: [0, 0, 0], title: 'Two', text: '' },
    ],
    background: { color: '#3366CC' },
    post: { exposure: -1.5, toneMapping: 'aces' },
    audio: { url: 'https://cdn.example/a.mp3', loop: true, volume: 0.5 },
    orientation: { rotation: [90, 0, -90] },
    custom: { kept: [1, 2] },
  };
  // Unknown keys inside the known objects are kept too (a newer editor may write them).
  raw.annotations[0].colour = 'red';
  raw.camera.near = 0.1;
  raw.post.bloom = 2;
  const got = level.readLevel(raw);
  assert.deepEqual(got, { ...raw, background: { color: '#3366cc' } });
  // A copy: the editor may change what it read without touching the source.
  got.annotations[0].position[0] = 9;
  assert.equal(raw.annotations[0].position[0], 1);
});

test('readLevel drops malformed parts and never throws', () => {
  for (const raw of [null, undefined, 42, 'x', [], { version: 7 }]) {
    assert.deepEqual(level.readLevel(raw), { version: 1 });
  }
  const got = level.readLevel({
    camera: { position: [1, 2], target: [0, 0, 0] },
    annotations: [
      { id: 'ok', position: [0, 0, 0], title: 'Fine' },
      { id: 'ok', position: [1, 1, 1], title: 'Duplicate id' },
      { id: 'bad id', position: [0, 0, 0], title: 'Space in id' },
      { id: 'nt', position: [0, 0, 0], title: '' },
      { id: 'np', position: [0, NaN, 0], title: 'NaN' },
      { id: 'cam', position: [0, 0, 0], title: 'Bad camera', text: 5, camera: { position: 'x' } },
      'junk',
    ],
    background: { color: 'blue' },
    post: { exposure: 20, toneMapping: 'filmic', bloom: 1 },
    audio: { url: '' },
    orientation: { rotation: [400, 0, 0] },
  });
  assert.deepEqual(got, {
    version: 1,
    annotations: [
      { id: 'ok', position: [0, 0, 0], title: 'Fine', text: '' },
      { id: 'cam', position: [0, 0, 0], title: 'Bad camera', text: '' },
    ],
    post: { bloom: 1 },
  });
  assert.equal(level.readLevel({ annotations: Array.from({ length: 250 }, (_, i) => ({ id: `a${i}`, position: [0, 0, 0], title: 't' })) }).annotations.length, 200);
  assert.equal(level.readLevel({ camera: { position: [0, 0, 1], target: [0, 0, 0], fov: 200 } }).camera.fov, undefined);
});

test('the default orientation is 180° about X; levelData overrides it', () => {
  assert.deepEqual(level.DEFAULT_ROTATION, [180, 0, 0]);
  assert.deepEqual(level.rotationOf(level.readLevel({})), [180, 0, 0]);
  assert.deepEqual(level.rotationOf(level.readLevel({ orientation: { rotation: [0, 0, 0] } })), [0, 0, 0]);
});

const close = (a, b, what) => a.forEach((v, i) => assert.ok(Math.abs(v - b[i]) < 1e-9, `${what}: ${a} vs ${b}`));

test('Euler rotations: X first, then Y, then Z about the world axes', () => {
  const { quatFromEuler, rotate } = geometry;
  // 180° about X: y-down training data turns upright (y and z flip).
  close(rotate(quatFromEuler([180, 0, 0]), [1, 2, 3]), [1, -2, -3], 'flip');
  close(rotate(quatFromEuler([90, 0, 0]), [0, 1, 0]), [0, 0, 1], 'x 90');
  close(rotate(quatFromEuler([0, 90, 0]), [0, 0, 1]), [1, 0, 0], 'y 90');
  close(rotate(quatFromEuler([0, 0, 90]), [1, 0, 0]), [0, 1, 0], 'z 90');
  // Order: (0,1,0) turned 90° about X is (0,0,1); then 90° about Y is (1,0,0).
  close(rotate(quatFromEuler([90, 90, 0]), [0, 1, 0]), [1, 0, 0], 'x then y');
  // and (1,0,0) turned 90° about Y is (0,0,-1), then 90° about Z stays: Z applies last.
  close(rotate(quatFromEuler([0, 90, 90]), [1, 0, 0]), [0, 0, -1], 'y then z');
});

test('rotated bounds frame the turned scene', () => {
  const b = { min: [-1, -1.2, -1], max: [1.5, 0.6, 1] };
  assert.deepEqual(geometry.rotateBounds(b, geometry.quatFromEuler([180, 0, 0])), { min: [-1, -0.6, -1], max: [1.5, 1.2, 1] });
  assert.deepEqual(geometry.rotateBounds(b, geometry.quatFromEuler([0, 0, 0])), b);
});

test('parseColor reads #rrggbb only', () => {
  assert.deepEqual(stage.parseColor('#3366cc'), [51, 102, 204]);
  assert.equal(stage.parseColor('#36c'), null);
  assert.equal(stage.parseColor('rgb(1,2,3)'), null);
});

test('sourceOfSplat loads the rendition once ready, the upload before', () => {
  const upload = { splatType: 'file', splatUrl: 'https://h.example/assets/i/a/u/b/splat_file/t/scene.ply' };
  const ready = { state: 'ready', renditionUrl: 'https://h.example/assets/i/a/u/b/rendition/s/scene.sog', renditionType: 'sog' };
  const lod = { state: 'ready', renditionUrl: 'https://h.example/assets/i/a/u/b/rendition/s/lod/lod-meta.json', renditionType: 'lod' };
  globalThis.location ??= { href: 'https://h.example/embed/viewer' };
  assert.deepEqual(engine.sourceOfSplat(upload), { format: 'ply', url: upload.splatUrl });
  for (const state of ['pending', 'failed', 'skipped']) {
    assert.deepEqual(engine.sourceOfSplat({ ...upload, processing: { state, renditionUrl: null, renditionType: null } }),
      { format: 'ply', url: upload.splatUrl }, state);
  }
  assert.deepEqual(engine.sourceOfSplat({ ...upload, processing: ready }), { format: 'sog', url: ready.renditionUrl });
  assert.deepEqual(engine.sourceOfSplat({ ...upload, processing: lod }), { format: 'lod', url: lod.renditionUrl });
  // A ready state without a URL (an older answer) or of an unknown type keeps the upload.
  assert.deepEqual(engine.sourceOfSplat({ ...upload, processing: { ...ready, renditionUrl: null } }), { format: 'ply', url: upload.splatUrl });
  assert.deepEqual(engine.sourceOfSplat({ ...upload, processing: { ...ready, renditionType: 'spz' } }), { format: 'ply', url: upload.splatUrl });
});
