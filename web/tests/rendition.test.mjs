// Renditions (issue 14): a scene whose rendition is ready is loaded from it, the compact SOG the
// media worker built, never from the upload; it renders, upright like its upload would; and the
// poster the media worker rasterised on the CPU agrees with what the viewer draws: the ground in
// the lower half, the column standing on it, to its right.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { classifyStand, env, decodePixels, launch, openViewer, splatOf, standColours } from './helpers.mjs';

const MIN_SHARE = 0.005;
const fmt = (c) => `${(c.share * 100).toFixed(1)}% at (${c.x.toFixed(2)}, ${c.y.toFixed(2)}), ${(c.lower * 100).toFixed(0)}% in the lower half`;

let browser;
before(async () => { browser = await launch(); });
after(async () => { await browser?.close(); });

function requireUpright(what, c) {
  assert.ok(c.green.share > MIN_SHARE && c.red.share > MIN_SHARE, `${what}: the scene is not drawn: ${JSON.stringify(c)}`);
  assert.ok(c.green.lower > 0.8, `${what}: the ground is not in the lower half: ${fmt(c.green)}`);
  assert.ok(c.red.y < c.green.y, `${what}: the column is not above its ground`);
  assert.ok(c.red.x > c.green.x, `${what}: the column is not right of the ground's centre`);
}

// viewScene opens the viewer on scene id: the paths it fetched, the standing scene's colours on
// its canvas, and how long until it drew its first frame. With settled, the colours are sampled
// again (for up to a minute) until settled accepts them: a streamed scene's first frame shows
// its coarse level while the finer ones still arrive.
async function viewScene(id, settled = () => true) {
  const fetched = [];
  const onRequest = (req) => fetched.push(new URL(req.url()).pathname);
  browser.context.on('request', onRequest);
  const started = Date.now();
  try {
    const { page } = await openViewer(browser.context, id);
    const ms = Date.now() - started;
    try {
      let viewer = await standColours(browser.context, page.mainFrame());
      for (const until = Date.now() + 60_000; !settled(viewer) && Date.now() < until;) {
        await new Promise((r) => setTimeout(r, 1000));
        viewer = await standColours(browser.context, page.mainFrame());
      }
      return { fetched, ms, viewer };
    } finally {
      await page.close();
    }
  } finally {
    browser.context.off('request', onRequest);
  }
}

test('a ready scene is loaded from its SOG rendition, upright, and its poster agrees with the viewer', async (t) => {
  const id = env.standScenes.rendition;
  assert.ok(id, 'the harness made no scene with a rendition');
  const sp = await splatOf(id);
  assert.equal(sp.processing.state, 'ready', JSON.stringify(sp.processing));
  assert.equal(sp.processing.renditionType, 'sog');
  const upload = new URL(sp.splatUrl).pathname.split('/').pop();
  const rendition = new URL(sp.processing.renditionUrl).pathname;

  const { fetched, viewer } = await viewScene(id);
  assert.ok(fetched.includes(rendition), `the viewer did not fetch the rendition ${rendition}: ${fetched.join(' ')}`);
  assert.ok(!fetched.some((p) => p.endsWith('/' + upload)), `the viewer fetched the upload ${upload} too`);
  t.diagnostic(`viewer: ground ${fmt(viewer.green)}; column ${fmt(viewer.red)}`);
  requireUpright('the viewer', viewer);

  const poster = classifyStand(await decodePixels(browser.context, sp.imageUrl));
  t.diagnostic(`poster: ground ${fmt(poster.green)}; column ${fmt(poster.red)}`);
  requireUpright('the poster', poster);
  // Same camera rule (the framed bounds), so the same picture within a margin: the canvas and
  // the poster differ in size and aspect, and one is a JPEG.
  for (const k of ['green', 'red']) {
    assert.ok(Math.abs(poster[k].x - viewer[k].x) < 0.15 && Math.abs(poster[k].y - viewer[k].y) < 0.15,
      `the poster's ${k} centroid (${poster[k].x.toFixed(2)}, ${poster[k].y.toFixed(2)}) is far from the viewer's (${viewer[k].x.toFixed(2)}, ${viewer[k].y.toFixed(2)})`);
  }
});

// coarsestFile is the unit lod-meta.json names for its coarsest level, resolved through its tree
// as a reader must (the folder names are only the writer's habit); the whole level is one unit.
function coarsestFile(lodMeta) {
  const last = lodMeta.lodLevels - 1;
  const files = new Set();
  const walk = (node) => {
    if (node.lods?.[last]) files.add(node.lods[last].file);
    for (const child of node.children ?? []) walk(child);
  };
  walk(lodMeta.tree);
  assert.equal(files.size, 1, `the coarsest level is not one file: ${[...files].map((f) => lodMeta.filenames[f])}`);
  return lodMeta.filenames[[...files][0]];
}

test('a million-Gaussian scene streams its Streamed SOG rendition coarse level first, upright', async (t) => {
  const id = env.standScenes.streamed;
  assert.ok(id, 'the harness made no Streamed SOG scene');
  const sp = await splatOf(id);
  assert.equal(sp.processing.state, 'ready', JSON.stringify(sp.processing));
  assert.equal(sp.processing.renditionType, 'lod');
  const upload = new URL(sp.splatUrl).pathname.split('/').pop();
  const meta = new URL(sp.processing.renditionUrl).pathname;
  const folder = meta.slice(0, meta.lastIndexOf('/') + 1);
  const res = await fetch(sp.processing.renditionUrl);
  assert.equal(res.status, 200);
  const coarsest = folder + coarsestFile(await res.json());

  // Judged once the ground is drawn about as fully as the single-file SOG's (7-8% of the frame).
  const { fetched, viewer, ms } = await viewScene(id, (v) => v.green.share > 0.05 && v.red.share > MIN_SHARE);
  t.diagnostic(`first frame after ${ms} ms`);
  assert.ok(fetched.includes(meta), `the viewer did not fetch ${meta}: ${fetched.join(' ')}`);
  const chunks = fetched.filter((p) => p.startsWith(folder) && p !== meta);
  assert.ok(chunks.length > 0, `the viewer fetched none of the rendition's level files: ${fetched.join(' ')}`);
  assert.ok(!fetched.some((p) => p.endsWith('/' + upload)), `the viewer fetched the upload ${upload} too`);
  // Coarse level first: the whole scene's coarsest level is the first level file it asks for,
  // before any finer level the camera wants.
  assert.equal(chunks[0], coarsest, `the first level file fetched is not the coarsest level's: ${chunks.slice(0, 5).join(' ')}`);
  t.diagnostic(`${chunks.length} level files; viewer: ground ${fmt(viewer.green)}; column ${fmt(viewer.red)}`);
  requireUpright('the streamed viewer', viewer);
});
