// The embed pages, their error page, the demo host page and the API reference under their
// Content Security Policies (docs/security.md): each works with not one violation, and a page
// the policy broke also fails on what it shows (a drawn canvas, two editors in a room, a saved
// thumbnail). A canary proves the recorder sees a violation.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { canvasCoverage, commitScene, embedFrame, env, mintSession, settled, splatOf } from './helpers.mjs';
import { assertStrict, launchRecording, noViolations, settledClean, watch } from './csp-common.mjs';

const AVATAR = 'http://avatars.invalid/csp.png';
const PNG_1PX = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==', 'base64');

let browser;
before(async () => { browser = await launchRecording(); });
after(async () => { await browser?.close(); });

test('the demo page, its viewer and two editors in a room work with no CSP violation', async () => {
  const page = await browser.context.newPage();
  const w = watch(page);
  await page.goto(`${env.demoUrl}/?pair=1&splatId=${env.formatScenes.ply}`);
  const viewer = await embedFrame(page, 'viewer-slot', 'viewer');
  await settledClean(viewer, w, 'the viewer');
  assert.ok((await canvasCoverage(browser.context, viewer)).drawn > 0.005, 'the viewer drew the scene');
  // Two editors on that scene (the page's own editor stays blank with ?pair=1): each sees the
  // other through the room's WebSocket.
  for (const slot of ['pair-a-slot', 'pair-b-slot']) {
    const editor = await embedFrame(page, slot, 'editor');
    await settledClean(editor, w, slot);
    await editor.waitForFunction(() => document.querySelectorAll('[data-presence-peer]').length === 2, null, { timeout: 30_000 })
      .catch((err) => { err.message += `\n${w.log.slice(-20).join('\n')}`; throw err; });
  }
  assertStrict(w.policies.get('/'), 'the demo page');
  assertStrict(w.policies.get('/embed/viewer'), 'the viewer page');
  assertStrict(w.policies.get('/embed/editor'), 'the editor page');
  await noViolations(w, 'the demo page');
  await page.close();
});

test('the editor shows an avatar and saves a scene, thumbnail upload included, with no CSP violation', async () => {
  const id = await commitScene('ball.ply', { title: 'CSP save' });
  const page = await browser.context.newPage();
  const w = watch(page);
  // The avatar is the integrator's URL, on a host of its own.
  await page.route(AVATAR, (route) => route.fulfill({ status: 200, contentType: 'image/png', body: PNG_1PX }));
  const token = await mintSession('editor', id, { name: 'CSP', avatarUrl: AVATAR });
  await page.goto(`${env.gatewayUrl}/embed/editor?session=${encodeURIComponent(token)}`);
  await settledClean(page.mainFrame(), w, 'the editor');
  await page.waitForFunction(() => document.querySelector('[data-presence-self] img')?.naturalWidth === 1, null, { timeout: 30_000 })
    .catch((err) => { err.message += `\n${w.log.slice(-20).join('\n')}`; throw err; });
  const put = page.waitForRequest((r) => r.method() === 'PUT' && !r.url().startsWith(env.gatewayUrl), { timeout: 60_000 });
  await page.fill('textarea[name=description]', 'Saved under the policy');
  await page.click('button[data-action=save]');
  await page.waitForFunction(() => document.documentElement.dataset.dirty === 'false'
    && !document.querySelector('button[data-action=save]').disabled, null, { timeout: 60_000, polling: 100 })
    .catch((err) => { err.message += `\n${w.log.slice(-20).join('\n')}`; throw err; });
  // The thumbnail went straight to the object store (another origin), and the scene has it.
  assert.ok((await put).url(), 'the thumbnail was PUT to the object store');
  assert.ok((await splatOf(id)).imageUrl, 'the save set the thumbnail');
  assertStrict(w.policies.get('/embed/editor'), 'the editor page');
  await noViolations(w, 'the editor');
  await page.close();
});

test('the editor previews a picked scene file and audio file, and saves them, with no CSP violation', async () => {
  const page = await browser.context.newPage();
  const w = watch(page);
  await page.goto(`${env.gatewayUrl}/embed/editor?session=${encodeURIComponent(await mintSession('editor', undefined, { name: 'CSP new' }))}`);
  await page.waitForSelector('input[name=scene-file]', { state: 'attached', timeout: 60_000 });
  // The picked file is drawn from the browser's copy (a blob: URL) before it is uploaded.
  await page.setInputFiles('input[name=scene-file]', join(env.fixtureDir, 'ball.ply'));
  await settledClean(page.mainFrame(), w, 'the picked file');
  assert.ok((await canvasCoverage(browser.context, page)).drawn > 0.005, 'the editor drew the picked file');
  await page.fill('input[name=title]', 'CSP new scene');
  await page.click('button[data-action=save]');
  await page.waitForFunction(() => /^[0-9a-f]{24}$/.test(document.documentElement.dataset.splatId ?? '')
    && document.documentElement.dataset.dirty === 'false', null, { timeout: 90_000, polling: 100 })
    .catch((err) => { err.message += `\n${w.log.slice(-20).join('\n')}`; throw err; });
  // Audio: uploaded, then previewed from the browser's copy (a blob: URL).
  const bytes = Buffer.concat([Buffer.from('ID3\x04\x00\x00\x00\x00\x00\x00'), Buffer.alloc(4000, 0x55)]);
  await page.setInputFiles('input[name=audio-file]', { name: 'theme.mp3', mimeType: 'audio/mpeg', buffer: bytes });
  await page.waitForSelector('.splathost-audio:not([hidden])', { timeout: 30_000 });
  await page.waitForFunction(() => document.querySelector('audio[src^="blob:"]'), null, { timeout: 10_000 });
  // The preview loads nothing until played: make it load, as pressing play does.
  await page.evaluate(() => new Promise((resolve) => {
    const a = document.querySelector('audio[src^="blob:"]');
    a.addEventListener('loadedmetadata', resolve, { once: true });
    a.addEventListener('error', resolve, { once: true });
    a.preload = 'auto';
    a.load();
  }));
  await noViolations(w, 'the editor with picked files');
  await page.close();
});

test('the error page shows its styled message with no CSP violation', async () => {
  const page = await browser.context.newPage();
  const w = watch(page);
  const res = await page.goto(`${env.gatewayUrl}/embed/viewer?session=not-a-token`);
  assert.equal(res.status(), 401);
  // Its one inline style is allowed by hash: applied, not blocked.
  assert.equal(await page.evaluate(() => getComputedStyle(document.body).backgroundColor), 'rgb(17, 17, 17)');
  assert.doesNotMatch(w.policies.get('/embed/viewer'), /'unsafe-inline'/);
  await noViolations(w, 'the error page');
  await page.close();
});

test('the API reference renders with no CSP violation', async () => {
  const page = await browser.context.newPage();
  const w = watch(page);
  await page.goto(`${env.gatewayUrl}/docs`);
  // Redoc renders the document's operations (from /openapi.yaml, in its worker).
  await page.waitForSelector('[data-section-id^="operation/"]', { timeout: 60_000 })
    .catch((err) => { err.message += `\n${w.log.join('\n')}`; throw err; });
  assert.match(w.policies.get('/docs'), /script-src 'self'/);
  await noViolations(w, 'the API reference');
  await page.close();
});

test('canary: an inline script or style is blocked and recorded', async () => {
  const page = await browser.context.newPage();
  const w = watch(page);
  await page.goto(`${env.gatewayUrl}/embed/viewer?session=${encodeURIComponent(await mintSession('viewer', env.formatScenes.sog))}`);
  assert.equal(await settled(page.mainFrame()), 'rendered', w.log.join('\n'));
  await page.evaluate(() => {
    const s = document.createElement('script');
    s.textContent = 'window.__injected = true';
    document.head.append(s);
    const st = document.createElement('style');
    st.textContent = 'body { background: red }';
    document.head.append(st);
  });
  const v = await w.violations();
  assert.equal(await page.evaluate(() => window.__injected), undefined, 'the inline script ran');
  assert.ok(v.some((s) => s.includes('script-src-elem blocked inline')), `no script violation recorded: ${v.join('\n')}`);
  assert.ok(v.some((s) => s.includes('style-src-elem blocked inline')), `no style violation recorded: ${v.join('\n')}`);
  await page.close();
});
