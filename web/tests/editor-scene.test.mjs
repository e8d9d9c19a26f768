// The editor edits the whole scene (issue 13 point 4): its panel sits beside the scene, never
// over it; annotations placed in the 3-D view are saved and shown by the viewer; a scene's first
// save gives it a thumbnail taken from the canvas; the view settings (orientation, background,
// exposure, tone mapping) and the allow toggles are saved into the scene.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { canvasCoverage, consoleOf, env, launch, mintSession, commitScene, openEditor, settled, splatOf } from './helpers.mjs';

let browser;
before(async () => { browser = await launch(); });
after(async () => { await browser?.close(); });

const box = (page, sel) => page.locator(sel).boundingBox();

/** Saves in the editor page and waits until it is clean again (the save went through). */
async function save(page) {
  await page.click('button[data-action=save]');
  try {
    await page.waitForFunction(() => document.documentElement.dataset.dirty === 'false'
      && !document.querySelector('button[data-action=save]').disabled, null, { timeout: 60_000, polling: 100 });
  } catch (err) {
    const status = await page.textContent('.splathost-status');
    err.message += `\nstatus: ${status}\n${(page.log ?? []).slice(-20).join('\n')}`;
    throw err;
  }
}

test('the panel never covers the scene, wide or narrow', async () => {
  const token = await mintSession('editor', env.sampleSplatId, { name: 'Layout check' });
  const page = await openEditor(browser.context, token);
  const wide = page.viewportSize();
  let canvas = await box(page, '#splathost-canvas');
  let panel = await box(page, '.splathost-panel');
  assert.ok(canvas.x + canvas.width <= panel.x + 0.5, `the canvas (${JSON.stringify(canvas)}) runs under the panel (${JSON.stringify(panel)})`);
  assert.ok(canvas.width >= wide.width - panel.width - 1 && canvas.height >= wide.height - 1, 'the canvas fills the rest of the page');
  // The engine draws at the canvas's own size (not the window's).
  const buffer = await page.$eval('#splathost-canvas', (c) => ({ w: c.width, h: c.height, cw: c.clientWidth, ch: c.clientHeight, dpr: devicePixelRatio }));
  assert.ok(Math.abs(buffer.w - buffer.cw * buffer.dpr) <= 1 && Math.abs(buffer.h - buffer.ch * buffer.dpr) <= 1, JSON.stringify(buffer));
  // And the scene is in the visible canvas.
  assert.ok((await canvasCoverage(browser.context, page)).drawn > 0.005, 'the scene is drawn');

  // A narrow screen stacks the panel under the scene.
  await page.setViewportSize({ width: 420, height: 820 });
  await page.waitForFunction(() => {
    const c = document.getElementById('splathost-canvas');
    return c.width === Math.round(c.clientWidth * devicePixelRatio);
  }, null, { timeout: 10_000 });
  canvas = await box(page, '#splathost-canvas');
  panel = await box(page, '.splathost-panel');
  assert.ok(canvas.y + canvas.height <= panel.y + 0.5, `narrow: the canvas (${JSON.stringify(canvas)}) runs under the panel (${JSON.stringify(panel)})`);
  assert.ok(canvas.width >= 419 && canvas.height > 300, `narrow: the canvas is ${canvas.width}x${canvas.height}`);
  await page.close();
});

test('annotations placed in the editor are saved and shown by the viewer', async () => {
  const id = await commitScene('ball.ply', { title: 'Annotated scene' });
  const page = await openEditor(browser.context, await mintSession('editor', id, { name: 'Annotator' }));
  await page.click('button[data-action=add-annotation]');
  assert.equal(await page.evaluate(() => document.documentElement.hasAttribute('data-placing')), true);
  const c = await box(page, '#splathost-canvas');
  await page.mouse.click(c.x + c.width * 0.5, c.y + c.height * 0.45);
  const row = page.locator('[data-annotation-row]');
  await row.waitFor({ timeout: 5_000 });
  await row.locator('input[name=annotation-title]').fill('The top');
  await row.locator('textarea[name=annotation-text]').fill('Where the ball is brightest.');
  // A second one, deleted again.
  await page.click('button[data-action=add-annotation]');
  await page.mouse.click(c.x + c.width * 0.3, c.y + c.height * 0.6);
  await page.waitForFunction(() => document.querySelectorAll('[data-annotation-row]').length === 2);
  await page.locator('[data-annotation-row]').nth(1).locator('button[data-action=delete-annotation]').click();
  await page.waitForFunction(() => document.querySelectorAll('[data-annotation-row]').length === 1);
  // The editor shows it as the viewer will: a hotspot marker.
  await page.locator('.splathost-hotspot[data-annotation-id]').waitFor({ state: 'attached' });
  await save(page);

  const saved = await splatOf(id);
  const list = saved.levelData.annotations;
  assert.equal(list.length, 1);
  assert.match(list[0].id, /^[A-Za-z0-9_-]{1,64}$/);
  assert.equal(list[0].title, 'The top');
  assert.equal(list[0].text, 'Where the ball is brightest.');
  assert.equal(list[0].position.length, 3);
  assert.ok(list[0].position.every(Number.isFinite));
  assert.ok(list[0].camera && list[0].camera.position.length === 3, 'placed with the view it was placed from');
  await page.close();

  // The viewer shows it as a hotspot with its title.
  const viewer = await browser.context.newPage();
  const log = consoleOf(viewer);
  await viewer.goto(`${env.gatewayUrl}/embed/viewer?session=${encodeURIComponent(await mintSession('viewer', id))}`);
  assert.equal(await settled(viewer), 'rendered', log.join('\n'));
  const hotspot = viewer.locator(`[data-annotation-id="${list[0].id}"]`);
  await hotspot.waitFor({ state: 'attached', timeout: 10_000 });
  assert.match(await viewer.evaluate(() => document.body.innerText + ' ' + [...document.querySelectorAll('[data-annotation-id]')].map((e) => e.getAttribute('aria-label') ?? e.title).join(' ')), /The top/);
  await viewer.close();
});

test("a scene's first save gives it a thumbnail from the canvas", async () => {
  const id = await commitScene('ball.ply', { title: 'No image yet' });
  assert.ok(!(await splatOf(id)).imageUrl, 'the scene starts without an image');
  const page = await openEditor(browser.context, await mintSession('editor', id, { name: 'Thumbnailer' }));
  const uploads = [];
  page.on('request', (r) => { if (r.url().includes('/uploads/splat-images')) uploads.push(r.postDataJSON()); });
  await page.fill('textarea[name=description]', 'Saved once');
  await save(page);
  const first = await splatOf(id);
  assert.ok(first.imageUrl, 'the first save set imageUrl');
  assert.equal(uploads.length, 1);
  assert.match(uploads[0].thumbnail.contentType, /^image\/(webp|jpeg)$/);
  // The image is the canvas: a real picture, served to the scene's owner.
  const res = await fetch(new URL(first.imageUrl, env.gatewayUrl), {
    headers: { Authorization: `Bearer ${env.secretKey}`, 'X-Service-Public-Key': env.publicKey, 'X-Service-External-User-Id': env.customer },
  });
  assert.equal(res.status, 200, `GET ${first.imageUrl}`);
  assert.match(res.headers.get('content-type'), /^image\/(webp|jpeg)/);
  const bytes = Buffer.from(await res.arrayBuffer());
  assert.equal(bytes.length, uploads[0].thumbnail.fileSize);
  // A second save keeps it.
  await page.fill('textarea[name=description]', 'Saved twice');
  await save(page);
  assert.equal((await splatOf(id)).imageUrl, first.imageUrl);
  assert.equal(uploads.length, 1, 'no second thumbnail');
  await page.close();
});

test('the view settings and the allow toggles are saved into the scene', async () => {
  const id = await commitScene('ball.ply', { title: 'View settings' });
  const page = await openEditor(browser.context, await mintSession('editor', id, { name: 'Viewsmith' }));
  await page.click('button[data-action=rotate]');
  await page.click('button[data-action=flip]');
  await page.$eval('input[name=background]', (el) => {
    el.value = '#102030';
    el.dispatchEvent(new Event('input', { bubbles: true }));
  });
  await page.$eval('input[name=exposure]', (el) => {
    el.value = '1.5';
    el.dispatchEvent(new Event('input', { bubbles: true }));
  });
  await page.selectOption('select[name=toneMapping]', 'aces');
  await page.uncheck('input[name=allowReactions]');
  await page.click('button[data-action=set-start-camera]');
  // The background is the canvas's clear colour now.
  await page.waitForFunction(() => {
    const c = document.getElementById('splathost-canvas');
    const g = document.createElement('canvas').getContext('2d');
    g.drawImage(c, 0, 0, 1, 1, 0, 0, 1, 1);
    const [r, gg, b] = g.getImageData(0, 0, 1, 1).data;
    return Math.abs(r - 16) <= 2 && Math.abs(gg - 32) <= 2 && Math.abs(b - 48) <= 2;
  }, null, { timeout: 10_000 });
  await save(page);
  const s = await splatOf(id);
  assert.deepEqual(s.levelData.orientation, { rotation: [0, 90, 0] });
  assert.deepEqual(s.levelData.background, { color: '#102030' });
  assert.deepEqual(s.levelData.post, { exposure: 1.5, toneMapping: 'aces' });
  assert.equal(s.levelData.version, 1);
  assert.equal(s.levelData.camera.position.length, 3);
  assert.equal(s.allowReactions, false);
  assert.equal(s.allowComments, true);
  // Reopened, the editor shows what was saved.
  await page.reload();
  assert.equal(await settled(page), 'rendered');
  assert.equal(await page.inputValue('input[name=background]'), '#102030');
  assert.equal(await page.inputValue('select[name=toneMapping]'), 'aces');
  assert.equal(await page.isChecked('input[name=allowReactions]'), false);
  assert.equal(await page.textContent('output[name=rotation]'), '0° 90° 0°');
  await page.close();
});

test('audio from an uploaded file is saved with its loop and volume, and removed again', async () => {
  const id = await commitScene('ball.ply', { title: 'With audio' });
  const page = await openEditor(browser.context, await mintSession('editor', id, { name: 'Sound designer' }));
  const uploads = [];
  page.on('request', (r) => { if (r.url().endsWith('/api/embed/editor/uploads/audio')) uploads.push(r.postDataJSON()); });
  // An MP3 as far as the upload route is concerned: its name, type and length.
  const bytes = Buffer.concat([Buffer.from('ID3\x04\x00\x00\x00\x00\x00\x00'), Buffer.alloc(4000, 0x55)]);
  await page.setInputFiles('input[name=audio-file]', { name: 'theme.mp3', mimeType: 'audio/mpeg', buffer: bytes });
  await page.waitForSelector('.splathost-audio:not([hidden])', { timeout: 30_000 });
  assert.deepEqual(uploads, [{ fileName: 'theme.mp3', contentType: 'audio/mpeg', fileSize: bytes.length }]);
  await page.uncheck('input[name=audioLoop]');
  await page.$eval('input[name=audioVolume]', (el) => {
    el.value = '0.4';
    el.dispatchEvent(new Event('input', { bubbles: true }));
  });
  await save(page);
  const saved = await splatOf(id);
  assert.equal(saved.levelData.audio.loop, false);
  assert.equal(saved.levelData.audio.volume, 0.4);
  assert.match(saved.levelData.audio.url, /audio\.mp3/);
  // The audio is charged with the scene.
  const before = saved.fileSizeBytes;
  assert.ok(before >= bytes.length, `fileSizeBytes ${before}`);
  // Saved again unchanged, it stays; removed, it goes (and its bytes with it).
  await page.fill('textarea[name=description]', 'Still with audio');
  await save(page);
  assert.equal((await splatOf(id)).levelData.audio.url, saved.levelData.audio.url);
  await page.click('button[data-action=remove-audio]');
  await save(page);
  const removed = await splatOf(id);
  assert.equal(removed.levelData.audio, undefined);
  assert.equal(removed.fileSizeBytes, before - bytes.length);
  await page.close();
});
