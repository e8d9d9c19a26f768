// The viewer's start camera and annotations (issue 13): levelData.camera is the first view,
// annotations are numbered hotspots that sit on their 3-D points, a click flies the camera to
// the annotation and shows its card; a host page drives the same through the SDK
// (goToAnnotation, setCamera) and hears `ready` and `annotation`. The scenes are the standing
// scene (green ground, red column at +x), committed by each test.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { canvasPixels, commitScene, consoleOf, env, eventually, launch, mintSession, openViewer, rest } from './helpers.mjs';
import { COLUMN, GROUND, LEVEL, START, card, expectedPixel, isGreen, isRed, markers, near } from './viewer-common.mjs';

let browser;
before(async () => { browser = await launch(); });
after(async () => { await browser?.close(); });

/** Waits until the marker `id` is within 2 px of p (a flight has ended there); returns it. */
async function settlesAt(frame, id, p, what) {
  const ok = await eventually(async () => {
    const m = (await markers(frame)).markers[id];
    return Math.hypot(m.x - p.x, m.y - p.y) < 2;
  }, { timeout: 10_000 });
  const m = (await markers(frame)).markers[id];
  assert.ok(ok, `${what}: the ${id} marker is at (${m.x.toFixed(1)}, ${m.y.toFixed(1)}), want (${p.x.toFixed(1)}, ${p.y.toFixed(1)})`);
}

test('the start camera is used, hotspots sit on their points, a click flies to one and shows its card', async () => {
  const id = await commitScene('stand.ply', { title: 'Hotspots', levelData: LEVEL });
  // Without reactions the viewer shows no like button.
  const r = await rest('PATCH', `/api/v1/splats/${id}`, { allowReactions: false });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  const { page, log } = await openViewer(browser.context, id);
  try {
    const frame = page.mainFrame();
    assert.equal(await page.locator('button[data-action="like"]').count(), 0, 'a like button without allowReactions');

    // The first view is levelData.camera: each marker where that camera draws its point, and
    // the engine draws the column under the column's marker and ground under the ground's.
    const m = await markers(frame);
    assert.deepEqual(Object.keys(m.markers).sort(), ['column', 'ground'], log.join('\n'));
    assert.equal(m.markers.column.n, '1');
    assert.equal(m.markers.ground.n, '2');
    assert.equal(m.markers.column.hidden, false);
    near(m.markers.column, expectedPixel(START, COLUMN.position, m.width, m.height), 2, 'the column marker');
    near(m.markers.ground, expectedPixel(START, GROUND.position, m.width, m.height), 2, 'the ground marker');
    const px = await canvasPixels(browser.context, frame);
    const under = (k) => px.at(m.markers[k].x, m.markers[k].y);
    assert.ok(isRed(under('column')), `not red under the column marker: ${under('column')}`);
    assert.ok(isGreen(under('ground')), `not green under the ground marker: ${under('ground')}`);
    assert.equal((await card(frame)).hidden, true, 'no card before a click');

    // The ground annotation has a camera looking at it: the flight ends there.
    const centre = { x: m.width / 2, y: m.height / 2 };
    await frame.click('[data-annotation-id="ground"]');
    const shown = await eventually(async () => { const c = await card(frame); return !c.hidden && c; });
    assert.ok(shown, `no card after the click:\n${log.join('\n')}`);
    assert.deepEqual([shown.id, shown.title], ['ground', GROUND.title]);
    await settlesAt(frame, 'ground', centre, 'after the click');
    await settlesAt(frame, 'column', expectedPixel(GROUND.camera, COLUMN.position, m.width, m.height), 'after the flight');
    assert.equal(await frame.getAttribute('[data-annotation-id="ground"]', 'aria-pressed'), 'true');

    // The column has no camera of its own: the camera turns to look at it from where it is.
    await frame.click('[data-annotation-id="column"]');
    const second = await eventually(async () => { const c = await card(frame); return c.title === COLUMN.title && c; });
    assert.ok(second, 'the card did not switch to the column');
    assert.equal(second.text, COLUMN.text);
    await settlesAt(frame, 'column', centre, 'after the second click');

    await frame.click('[data-annotation-card] button');
    assert.equal((await card(frame)).hidden, true, 'the close button hides the card');
  } finally {
    await page.close();
  }
});

test('a host page drives the viewer through the SDK: goToAnnotation, setCamera, events', async () => {
  const id = await commitScene('stand.ply', { title: 'Host', levelData: LEVEL });
  const token = await mintSession('viewer', id);
  // The host: an integrator's page on its own origin (another port) that mounts the viewer
  // with the SDK served by the gateway.
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
  const annotations = () => page.evaluate(() => window.events.filter((e) => e.type === 'annotation').map((e) => e.payload));
  try {
    await page.goto(`${host}/`);
    await page.waitForFunction(() => window.viewer, null, { timeout: 30_000 });
    // Sent before the viewer is ready: the SDK holds it until `ready`.
    await page.evaluate(() => window.viewer.goToAnnotation('ground'));
    await page.waitForFunction(() => window.events.some((e) => e.type === 'ready'), null, { timeout: 180_000 });
    const frame = await (await page.$('#slot iframe')).contentFrame();
    assert.ok(await eventually(async () => (await annotations()).length === 1), `no annotation event:\n${log.join('\n')}`);
    assert.deepEqual(await annotations(), [{ id: 'ground', title: 'The ground' }]);
    assert.equal((await card(frame)).title, 'The ground');

    // setCamera flies to a view of the column: its marker ends at the centre.
    const cam = { position: [2, 1, 4], target: COLUMN.position, fov: 45 };
    await page.evaluate((c) => window.viewer.setCamera(c), cam);
    const m = await markers(frame);
    await settlesAt(frame, 'column', { x: m.width / 2, y: m.height / 2 }, 'after setCamera');
    await settlesAt(frame, 'ground', expectedPixel(cam, GROUND.position, m.width, m.height), 'after setCamera');

    // A visitor's click is reported too; an unknown annotation changes nothing.
    await frame.click('[data-annotation-id="column"]');
    assert.ok(await eventually(async () => (await annotations()).length === 2));
    assert.deepEqual((await annotations()).map((a) => a.id), ['ground', 'column']);
    await page.evaluate(() => window.viewer.goToAnnotation('nope'));
    await new Promise((r) => setTimeout(r, 300));
    assert.equal((await card(frame)).title, 'The column');
    assert.equal((await annotations()).length, 2);
  } finally {
    await page.close();
    server.close();
  }
});
