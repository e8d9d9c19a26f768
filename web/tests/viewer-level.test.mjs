// The viewer honours levelData v1 (issue 13): the start camera, annotations as numbered hotspots
// that follow the scene and fly the camera on a click, the background colour, the exposure in
// both engines, the like button (like, unlike, remembered per visitor), and the host's commands
// through the SDK (setCamera, goToAnnotation, the annotation and ready events). Each test
// commits scenes of its own (the standing scene: green ground, red column at +x).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import {
  BACKGROUND, commitScene, consoleOf, env, eventually, launch, mintSession, openViewer, rest, settled, splatOf,
} from './helpers.mjs';

let browser;
before(async () => { browser = await launch(); });
after(async () => { await browser?.close(); });

// In the viewer's world frame (Y up, after the default orientation) the ground lies at y -0.6 and
// the column stands on it at x 0.6, up to y 1.2.
const START = { position: [0, 1, 5], target: [0, 0.3, 0], fov: 50 };
const COLUMN = { id: 'column', position: [0.6, 0.3, 0], title: 'The column', text: 'A red column on green ground.' };
const GROUND = {
  id: 'ground', position: [-0.9, -0.6, 0.5], title: 'The ground', text: '',
  camera: { position: [-0.9, 1.5, 3], target: [-0.9, -0.6, 0.5], fov: 60 },
};
const LEVEL = { version: 1, camera: START, annotations: [COLUMN, GROUND] };

/** Where a pinhole camera (vertical fov, Y up) draws p on a width×height canvas: an independent
 * statement of what both engines do, to check the viewer's camera and markers against. */
function expectedPixel(cam, p, width, height) {
  const sub = (a, b) => a.map((v, i) => v - b[i]);
  const dot = (a, b) => a.reduce((s, v, i) => s + v * b[i], 0);
  const unit = (a) => { const l = Math.hypot(...a); return a.map((v) => v / l); };
  const cross = (a, b) => [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]];
  const f = unit(sub(cam.target, cam.position));
  const r = unit(cross(f, [0, 1, 0]));
  const u = cross(r, f);
  const d = sub(p, cam.position);
  const t = Math.tan(((cam.fov ?? 60) * Math.PI) / 360);
  const x = dot(d, r) / (dot(d, f) * t * (width / height));
  const y = dot(d, u) / (dot(d, f) * t);
  return { x: ((x + 1) / 2) * width, y: ((1 - y) / 2) * height };
}

/** The markers in the frame: id → {n (its number), x, y (its centre in canvas pixels), hidden}. */
function markers(frame) {
  return frame.evaluate(() => {
    const c = document.getElementById('splathost-canvas').getBoundingClientRect();
    const out = {};
    for (const el of document.querySelectorAll('[data-annotation-id]')) {
      const r = el.getBoundingClientRect();
      out[el.dataset.annotationId] = {
        n: el.textContent, hidden: el.hidden, x: r.left + r.width / 2 - c.left, y: r.top + r.height / 2 - c.top,
      };
    }
    return { markers: out, width: c.width, height: c.height };
  });
}

/** The card's state: {hidden, id, title, text}. */
function card(frame) {
  return frame.evaluate(() => {
    const el = document.querySelector('[data-annotation-card]');
    return el && { hidden: el.hidden, id: el.dataset.annotationCard, title: el.querySelector('h2')?.textContent, text: el.querySelector('p')?.textContent };
  });
}

/** The canvas's pixels without the overlays: a decoder reads the screenshot; returns a function
 * giving [r, g, b] at a canvas pixel. */
async function pixels(frame) {
  await frame.evaluate(() => { for (const el of document.querySelectorAll('.splathost-hotspots, .splathost-card, .splathost-controls')) el.style.visibility = 'hidden'; });
  const png = await frame.locator('#splathost-canvas').screenshot();
  await frame.evaluate(() => { for (const el of document.querySelectorAll('.splathost-hotspots, .splathost-card, .splathost-controls')) el.style.visibility = ''; });
  const decoder = await browser.context.newPage();
  try {
    const { width, data } = await decoder.evaluate(async (b64) => {
      const img = new Image();
      img.src = `data:image/png;base64,${b64}`;
      await img.decode();
      const c = document.createElement('canvas');
      c.width = img.width;
      c.height = img.height;
      const g = c.getContext('2d');
      g.drawImage(img, 0, 0);
      return { width: c.width, data: [...g.getImageData(0, 0, c.width, c.height).data] };
    }, png.toString('base64'));
    return {
      width, height: data.length / 4 / width, data,
      at(x, y) { const i = 4 * (Math.round(y) * width + Math.round(x)); return [data[i], data[i + 1], data[i + 2]]; },
    };
  } finally {
    await decoder.close();
  }
}

const isRed = ([r, g, b]) => r - Math.max(g, b) > 60;
const isGreen = ([r, g, b]) => g - Math.max(r, b) > 60;
const near = (m, p, tol, what) => assert.ok(Math.hypot(m.x - p.x, m.y - p.y) <= tol,
  `${what}: at (${m.x.toFixed(1)}, ${m.y.toFixed(1)}), want (${p.x.toFixed(1)}, ${p.y.toFixed(1)})`);

test('the start camera from levelData is used and annotations are drawn on their points', async () => {
  const id = await commitScene('stand.ply', { title: 'Hotspots', levelData: LEVEL });
  const { page, log } = await openViewer(browser.context, id);
  try {
    const frame = page.mainFrame();
    const m = await markers(frame);
    assert.deepEqual(Object.keys(m.markers).sort(), ['column', 'ground'], log.join('\n'));
    assert.equal(m.markers.column.n, '1');
    assert.equal(m.markers.ground.n, '2');
    assert.equal(m.markers.column.hidden, false);
    near(m.markers.column, expectedPixel(START, COLUMN.position, m.width, m.height), 2, 'the column marker');
    near(m.markers.ground, expectedPixel(START, GROUND.position, m.width, m.height), 2, 'the ground marker');
    // The engine draws what the markers point at: the column under its marker, ground under its.
    const px = await pixels(frame);
    assert.ok(isRed(px.at(m.markers.column.x, m.markers.column.y)), `not red under the column marker: ${px.at(m.markers.column.x, m.markers.column.y)}`);
    assert.ok(isGreen(px.at(m.markers.ground.x, m.markers.ground.y)), `not green under the ground marker: ${px.at(m.markers.ground.x, m.markers.ground.y)}`);
    assert.equal((await card(frame)).hidden, true, 'no card before a click');
  } finally {
    await page.close();
  }
});

test('a click on a hotspot flies the camera to it and shows its card', async () => {
  const id = await commitScene('stand.ply', { title: 'Fly', levelData: LEVEL });
  const { page, log } = await openViewer(browser.context, id);
  try {
    const frame = page.mainFrame();
    const before = await markers(frame);
    const centre = { x: before.width / 2, y: before.height / 2 };
    // The ground annotation has a camera looking at it: its marker ends at the centre.
    await frame.click('[data-annotation-id="ground"]');
    const shown = await eventually(async () => { const c = await card(frame); return c && !c.hidden && c; });
    assert.ok(shown, `no card after the click:\n${log.join('\n')}`);
    assert.equal(shown.title, GROUND.title);
    assert.equal(shown.id, 'ground');
    const arrived = await eventually(async () => {
      const m = (await markers(frame)).markers.ground;
      return Math.hypot(m.x - centre.x, m.y - centre.y) < 2 && m;
    }, { timeout: 10_000 });
    assert.ok(arrived, `the camera did not fly to the ground annotation: ${JSON.stringify((await markers(frame)).markers.ground)}`);
    near((await markers(frame)).markers.column, expectedPixel(GROUND.camera, COLUMN.position, before.width, before.height), 2, 'the column marker after the flight');
    assert.equal(await frame.getAttribute('[data-annotation-id="ground"]', 'aria-pressed'), 'true');

    // The column has no camera of its own: the camera turns to look at it from where it is.
    await frame.click('[data-annotation-id="column"]');
    const second = await eventually(async () => { const c = await card(frame); return c.title === COLUMN.title && c; });
    assert.ok(second, 'the card did not switch to the column');
    assert.equal(second.text, COLUMN.text);
    assert.ok(await eventually(async () => {
      const m = (await markers(frame)).markers.column;
      return Math.hypot(m.x - centre.x, m.y - centre.y) < 2;
    }, { timeout: 10_000 }), 'the camera did not turn to the column');

    await frame.click('[data-annotation-card] button');
    assert.equal((await card(frame)).hidden, true, 'the close button hides the card');
  } finally {
    await page.close();
  }
});

test('the background colour replaces the clear colour', async () => {
  const id = await commitScene('stand.ply', { title: 'Blue', levelData: { version: 1, background: { color: '#3366cc' } } });
  const { page } = await openViewer(browser.context, id);
  try {
    const px = await pixels(page.mainFrame());
    let blue = 0, clear = 0, green = 0;
    for (let i = 0; i < px.data.length; i += 4) {
      const d = (c) => Math.max(Math.abs(px.data[i] - c[0]), Math.abs(px.data[i + 1] - c[1]), Math.abs(px.data[i + 2] - c[2]));
      if (d([0x33, 0x66, 0xcc]) <= 2) blue++;
      if (d(BACKGROUND) <= 2) clear++;
      if (isGreen([px.data[i], px.data[i + 1], px.data[i + 2]])) green++;
    }
    const n = px.data.length / 4;
    assert.ok(blue / n > 0.3, `only ${(blue / n * 100).toFixed(1)}% of the canvas is #3366cc`);
    assert.ok(clear / n < 0.001, `${(clear / n * 100).toFixed(2)}% of the canvas is still the default clear colour`);
    assert.ok(green / n > 0.02, 'the scene is drawn over the background');
  } finally {
    await page.close();
  }
});

/** The mean green channel of the ground's pixels. */
async function groundLevel(id) {
  const { page } = await openViewer(browser.context, id);
  try {
    const px = await pixels(page.mainFrame());
    let sum = 0, n = 0;
    for (let i = 0; i < px.data.length; i += 4) {
      const [r, g, b] = [px.data[i], px.data[i + 1], px.data[i + 2]];
      if (g > r + 25 && g > b + 25) { sum += g; n++; }
    }
    assert.ok(n > 1000, `the ground is not drawn in ${id}`);
    return sum / n;
  } finally {
    await page.close();
  }
}

for (const [file, engine] of [['stand.ply', 'PlayCanvas'], ['stand.splat', 'Spark']]) {
  test(`exposure darkens the scene in ${engine}`, async (t) => {
    const plain = await commitScene(file, { title: 'Plain' });
    const dark = await commitScene(file, { title: 'Dark', levelData: { version: 1, post: { exposure: -1.5, toneMapping: 'linear' } } });
    const a = await groundLevel(plain);
    const b = await groundLevel(dark);
    t.diagnostic(`ground green: ${a.toFixed(1)} as stored, ${b.toFixed(1)} at -1.5 stops`);
    // -1.5 stops: linear ×0.35, about ×0.62 in sRGB.
    assert.ok(b < a * 0.8, `exposure -1.5 did not darken the ${engine} scene: ${a.toFixed(1)} → ${b.toFixed(1)}`);
    assert.ok(b > a * 0.4, `exposure -1.5 darkened the ${engine} scene too much: ${a.toFixed(1)} → ${b.toFixed(1)}`);
  });
}

test('the like button likes and unlikes, and remembers the visitor', async () => {
  const id = await commitScene('stand.ply', { title: 'Likes' });
  const { page, log } = await openViewer(browser.context, id);
  try {
    const like = page.locator('button[data-action="like"]');
    assert.equal(await like.getAttribute('aria-pressed'), 'false');
    assert.equal(await like.locator('[data-like-count]').textContent(), '0');
    await like.click();
    assert.ok(await eventually(async () => (await like.getAttribute('aria-pressed')) === 'true'), log.join('\n'));
    assert.equal(await like.locator('[data-like-count]').textContent(), '1');
    assert.equal((await splatOf(id)).likeCount, 1);

    await page.reload();
    assert.equal(await settled(page.mainFrame()), 'rendered');
    assert.equal(await like.getAttribute('aria-pressed'), 'true', 'the like is remembered');
    assert.equal(await like.locator('[data-like-count]').textContent(), '1');
    await like.click();
    assert.ok(await eventually(async () => (await like.getAttribute('aria-pressed')) === 'false'), log.join('\n'));
    assert.equal(await like.locator('[data-like-count]').textContent(), '0');
    assert.equal((await splatOf(id)).likeCount, 0);
  } finally {
    await page.close();
  }
  // Where the owner turned reactions off, there is no button.
  const r = await rest('PATCH', `/api/v1/splats/${id}`, { allowReactions: false });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  const again = await openViewer(browser.context, id);
  try {
    assert.equal(await again.page.locator('button[data-action="like"]').count(), 0);
  } finally {
    await again.page.close();
  }
});

test('a host page drives the viewer through the SDK: goToAnnotation, setCamera, events', async () => {
  const id = await commitScene('stand.ply', { title: 'Host', levelData: LEVEL });
  const token = await mintSession('viewer', id);
  // The host: an integrator's page on its own origin that mounts the viewer with the SDK.
  const server = createServer((req, res) => {
    res.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8' });
    res.end(`<!doctype html><title>host</title>
<div id="slot" style="width:800px;height:600px"></div>
<script type="module">
  import { mountViewer } from '${env.gatewayUrl}/sdk/splathost-embed.js';
  window.events = [];
  const viewer = mountViewer(document.getElementById('slot'), { baseUrl: '${env.gatewayUrl}', sessionToken: ${JSON.stringify(token)} });
  viewer.on('ready', (p) => window.events.push({ type: 'ready', payload: p }));
  viewer.on('annotation', (p) => window.events.push({ type: 'annotation', payload: p }));
  window.viewer = viewer;
</script>`);
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const host = `http://127.0.0.1:${server.address().port}`;
  const page = await browser.context.newPage();
  const log = consoleOf(page);
  try {
    await page.goto(`${host}/`);
    // A command sent before the viewer is ready waits for it.
    await page.waitForFunction(() => window.viewer, null, { timeout: 30_000 });
    await page.evaluate(() => window.viewer.goToAnnotation('ground'));
    await page.waitForFunction(() => window.events.some((e) => e.type === 'ready'), null, { timeout: 120_000 });
    const frame = await (await page.$('#slot iframe')).contentFrame();
    await page.waitForFunction(() => window.events.some((e) => e.type === 'annotation'), null, { timeout: 10_000 });
    assert.deepEqual((await page.evaluate(() => window.events)).find((e) => e.type === 'annotation').payload, { id: 'ground', title: 'The ground' });
    assert.equal((await card(frame)).title, 'The ground');

    // setCamera flies to a view of the column: its marker ends at the centre.
    await page.evaluate((target) => window.viewer.setCamera({ position: [2, 1, 4], target, fov: 45 }), COLUMN.position);
    const m0 = await markers(frame);
    assert.ok(await eventually(async () => {
      const m = (await markers(frame)).markers.column;
      return Math.hypot(m.x - m0.width / 2, m.y - m0.height / 2) < 2;
    }, { timeout: 10_000 }), `setCamera did not move the camera:\n${log.join('\n')}`);
    near((await markers(frame)).markers.ground, expectedPixel({ position: [2, 1, 4], target: COLUMN.position, fov: 45 }, GROUND.position, m0.width, m0.height), 2, 'the ground marker after setCamera');

    // A visitor's click is reported too.
    await frame.click('[data-annotation-id="column"]');
    await page.waitForFunction(() => window.events.filter((e) => e.type === 'annotation').length === 2, null, { timeout: 10_000 });
    assert.deepEqual((await page.evaluate(() => window.events)).filter((e) => e.type === 'annotation').map((e) => e.payload.id), ['ground', 'column']);
    // An unknown annotation changes nothing.
    await page.evaluate(() => window.viewer.goToAnnotation('nope'));
    await new Promise((r) => setTimeout(r, 300));
    assert.equal((await card(frame)).title, 'The column');
  } finally {
    await page.close();
    server.close();
  }
});
