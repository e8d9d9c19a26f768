// The raw-iframe integration (contract item 8): a host page on its own origin frames
// /embed/editor?session=JWT itself, without the SDK. The editor posts its events to the framing
// page's origin as the browser reports it and takes host messages only from its parent at that
// origin; a hostOrigin parameter that disagrees with the framing page silences it; messages from
// another origin are ignored. The host page is served by the test itself on its own origin, so
// it is cross-origin to the gateway like a real integrator's page.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { consoleOf, env, eventually, launch, SPLAT_ID } from './helpers.mjs';

const FOREIGN = 'http://foreign.invalid';
const gatewayOrigin = new URL(env.gatewayUrl).origin;

/** The host page: an iframe whose src is the page's own ?src=, and a log of every message its
 * iframe posts (with the origin the browser stamped on it) in window.events. */
function hostPage(src) {
  const attr = src.replaceAll('&', '&amp;').replaceAll('"', '&quot;');
  return `<!doctype html><title>raw host</title>
<script>
  window.events = [];
  window.stray = [];
  window.addEventListener('message', (e) => {
    const frame = document.getElementById('editor');
    if (frame && e.source === frame.contentWindow) window.events.push({ origin: e.origin, data: e.data });
    else window.stray.push({ origin: e.origin, data: e.data });
  });
</script>
<iframe id="editor" src="${attr}" style="width:800px;height:600px;border:0"></iframe>`;
}

// The host is a real server on loopback (another port, so another origin than the gateway):
// Chromium refuses to let a page of a public origin (an intercepted .invalid one) frame a
// loopback address (Private Network Access), so the host must be local like the demo host.
let HOST;
let server;
let browser;
before(async () => {
  server = createServer((req, res) => {
    const src = new URL(req.url, 'http://x').searchParams.get('src') ?? '';
    res.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8' });
    res.end(hostPage(src));
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  HOST = `http://127.0.0.1:${server.address().port}`;
  assert.notEqual(HOST, gatewayOrigin);
  browser = await launch();
  await browser.context.route(`${FOREIGN}/**`, (route) => route.fulfill({
    status: 200, contentType: 'text/html', body: '<!doctype html><title>foreign</title><p>foreign</p>',
  }));
});
after(async () => {
  await browser?.close();
  server?.close();
});

/** Mints a scoped editor session as the integrator's server does (secret key, server side). */
async function editorSession(splatId) {
  const res = await fetch(`${env.gatewayUrl}/api/editor/embed-sessions`, {
    method: 'POST',
    headers: {
      Authorization: `Bearer ${env.secretKey}`, 'X-Service-External-User-Id': env.customer,
      'Content-Type': 'application/json',
    },
    body: JSON.stringify({ publicKey: env.publicKey, type: 'editor', splatId, user: { name: 'Raw host' } }),
  });
  const body = await res.json();
  assert.equal(res.status, 201, JSON.stringify(body));
  return body.sessionToken;
}

/** Opens the raw host page framing the editor (with extra query parameters); returns the page
 * and the editor's frame once it shows the editor page. */
async function openRawHost(extra = '') {
  const token = await editorSession(env.sampleSplatId);
  const src = `${env.gatewayUrl}/embed/editor?session=${encodeURIComponent(token)}${extra}`;
  const page = await browser.context.newPage();
  const log = consoleOf(page);
  await page.goto(`${HOST}/host?src=${encodeURIComponent(src)}`);
  const handle = await page.waitForSelector('#editor', { timeout: 30_000 });
  const frame = await handle.contentFrame();
  await frame.waitForURL(/\/embed\/editor\?/, { timeout: 30_000 });
  await frame.waitForLoadState('domcontentloaded');
  return { page, frame, log };
}

const events = (page) => page.evaluate(() => window.events);

/** Waits for the first event of type after index from; returns it. */
async function waitFor(page, type, from = 0, timeout = 90_000) {
  const handle = await page.waitForFunction(({ type, from }) => {
    return window.events.slice(from).find((e) => e.data && e.data.type === type) ?? null;
  }, { type, from }, { timeout, polling: 100 });
  return handle.jsonValue();
}

/** Sends a host message from the host page (the editor's parent) to the editor. */
function hostSays(page, msg, targetOrigin = gatewayOrigin) {
  return page.evaluate(({ msg, targetOrigin }) => {
    document.getElementById('editor').contentWindow.postMessage(msg, targetOrigin);
  }, { msg, targetOrigin });
}

test('a raw iframe host receives the editor events and drives the editor', async () => {
  const { page, frame, log } = await openRawHost();
  try {
    const loaded = await waitFor(page, 'projectLoaded');
    assert.deepEqual(loaded.data, { source: 'service-editor', type: 'projectLoaded', payload: { splatId: env.sampleSplatId } });
    const ready = await waitFor(page, 'ready');
    assert.equal(ready.data.source, 'service-editor');
    for (const e of await events(page)) assert.equal(e.origin, gatewayOrigin, 'every event comes from the embed origin');

    // Editing posts dirtyChanged to the raw host.
    let mark = (await events(page)).length;
    await frame.fill('input[name=title]', 'typed in a raw iframe');
    assert.deepEqual((await waitFor(page, 'dirtyChanged', mark)).data.payload, { dirty: true });

    // The host (the parent, at the framing origin) drives the editor without the SDK.
    mark = (await events(page)).length;
    await hostSays(page, { source: 'splathost-host', type: 'createProject', payload: {} });
    await waitFor(page, 'projectCreated', mark);
    assert.equal(await frame.evaluate(() => document.documentElement.dataset.splatId), '');
    mark = (await events(page)).length;
    await hostSays(page, { source: 'splathost-host', type: 'openProject', payload: { splatId: env.sampleSplatId } });
    const reopened = await waitFor(page, 'projectLoaded', mark);
    assert.match(reopened.data.payload.splatId, SPLAT_ID);
    assert.equal(reopened.data.payload.splatId, env.sampleSplatId);
  } catch (err) {
    err.message += `\n${log.join('\n')}`;
    throw err;
  } finally {
    await page.close();
  }
});

test('the SDK-style hostOrigin parameter works when it names the framing page', async () => {
  const { page, log } = await openRawHost(`&hostOrigin=${encodeURIComponent(HOST)}`);
  try {
    await waitFor(page, 'ready');
  } catch (err) {
    err.message += `\n${log.join('\n')}`;
    throw err;
  } finally {
    await page.close();
  }
});

test('a hostOrigin that disagrees with the framing page silences the editor', async () => {
  const { page, frame, log } = await openRawHost(`&hostOrigin=${encodeURIComponent(FOREIGN)}`);
  try {
    // The editor runs (it opens the session's scene) but tells nobody.
    await frame.waitForFunction(() => ['rendered', 'error'].includes(document.documentElement.dataset.splathost),
      null, { timeout: 90_000, polling: 250 });
    assert.equal(await frame.evaluate(() => document.documentElement.dataset.splatId), env.sampleSplatId);
    await frame.fill('input[name=title]', 'typed while silenced');
    // Nor does it obey the host: a createProject would clear the scene id.
    await hostSays(page, { source: 'splathost-host', type: 'createProject', payload: {} });
    await new Promise((r) => setTimeout(r, 2000));
    assert.deepEqual(await events(page), [], 'the editor posted to a page whose origin hostOrigin does not name');
    assert.deepEqual(await page.evaluate(() => window.stray), []);
    assert.equal(await frame.evaluate(() => document.documentElement.dataset.splatId), env.sampleSplatId);
    assert.ok(await eventually(() => log.some((l) => l.includes('hostOrigin does not match the framing page'))),
      `the editor says why in the console:\n${log.join('\n')}`);
  } finally {
    await page.close();
  }
});

test('host messages from another origin are ignored', async () => {
  const { page, frame, log } = await openRawHost();
  try {
    await waitFor(page, 'ready');
    assert.equal(await frame.evaluate(() => document.documentElement.dataset.splatId), env.sampleSplatId);
    // A foreign frame on the host page tells every frame to clear and to open another scene.
    await page.evaluate((url) => new Promise((resolve) => {
      const f = document.createElement('iframe');
      f.name = 'foreign';
      f.src = url;
      f.onload = () => resolve();
      document.body.append(f);
    }), `${FOREIGN}/frame`);
    const foreign = page.frame({ name: 'foreign' });
    assert.ok(foreign);
    let mark = (await events(page)).length;
    await foreign.evaluate(({ splatId }) => {
      for (const msg of [
        { source: 'splathost-host', type: 'createProject', payload: {} },
        { source: 'splathost-host', type: 'openProject', payload: { splatId } },
      ]) {
        for (let i = 0; i < window.parent.frames.length; i++) window.parent.frames[i].postMessage(msg, '*');
      }
    }, { splatId: env.formatScenes.ply });
    // The host page itself, but with a host message that does not say it is one.
    await hostSays(page, { source: 'someone-else', type: 'createProject', payload: {} });
    await new Promise((r) => setTimeout(r, 3000));
    // A genuine event as a barrier: the forgeries were handled before it.
    await frame.fill('input[name=title]', 'typed after the forgeries');
    await waitFor(page, 'dirtyChanged', mark);
    const obeyed = (await events(page)).slice(mark).filter((e) => ['projectLoaded', 'projectCreated'].includes(e.data.type));
    assert.deepEqual(obeyed, [], 'a forged host command was obeyed');
    assert.equal(await frame.evaluate(() => document.documentElement.dataset.splatId), env.sampleSplatId);
    // The genuine parent still drives it.
    mark = (await events(page)).length;
    await hostSays(page, { source: 'splathost-host', type: 'createProject', payload: {} });
    await waitFor(page, 'projectCreated', mark);
  } catch (err) {
    err.message += `\n${log.join('\n')}`;
    throw err;
  } finally {
    await page.close();
  }
});
