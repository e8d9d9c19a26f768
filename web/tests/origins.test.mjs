// Messages are accepted only from the right window and origin: the SDK on the demo page drops an
// editor-shaped message from a frame on a foreign origin and from a frame on the embed's own
// origin that is not the editor's iframe; the editor drops a host-shaped message from a frame
// that is not its parent. Genuine messages still pass, which proves the listeners are alive.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { consoleOf, embedFrame, env, eventLog, launch, logLength, waitEvent } from './helpers.mjs';

// A foreign site, served by the test itself through request interception: no server needed.
const FOREIGN = 'http://foreign.invalid';
const FAKE_ID = 'f'.repeat(24);

let browser;
before(async () => {
  browser = await launch();
  await browser.context.route(`${FOREIGN}/**`, (route) => route.fulfill({
    status: 200, contentType: 'text/html', body: '<!doctype html><title>foreign</title><p>foreign</p>',
  }));
});
after(async () => { await browser?.close(); });

/** Adds an iframe showing url to the demo page and returns its frame once loaded. */
async function addFrame(page, url, name) {
  await page.evaluate(({ url, name }) => new Promise((resolve) => {
    const f = document.createElement('iframe');
    f.name = name;
    f.src = url;
    f.onload = () => resolve();
    document.body.append(f);
  }), { url, name });
  const frame = page.frame({ name });
  assert.ok(frame, `frame ${name} not found`);
  return frame;
}

test('forged messages are ignored, genuine ones delivered', async (t) => {
  const page = await browser.context.newPage();
  const log = consoleOf(page);
  // The editor is signed in, so a forged openProject would open the sample for real.
  await page.goto(`${env.demoUrl}/?editor=scoped`);
  await waitEvent(page, 'ready', { timeout: 90_000 });
  const editor = await embedFrame(page, 'editor-slot', 'editor');
  const foreign = await addFrame(page, `${FOREIGN}/frame`, 'foreign');
  // Same origin as the embeds, but not the editor's iframe: the gateway's (script-free) error
  // page for a missing session.
  const gatewayFrame = await addFrame(page, `${env.gatewayUrl}/embed/editor`, 'gateway-lookalike');
  assert.equal(new URL(gatewayFrame.url()).origin, new URL(env.gatewayUrl).origin);

  await t.test('the SDK drops editor events from other windows', async () => {
    const mark = await logLength(page);
    const forged = { source: 'service-editor', type: 'saved', payload: { splatId: FAKE_ID } };
    for (const frame of [foreign, gatewayFrame]) {
      await frame.evaluate((msg) => window.parent.postMessage(msg, '*'), forged);
    }
    // The host page itself (the SDK's own window) is no editor either.
    await page.evaluate((msg) => window.postMessage(msg, '*'), forged);
    // A genuine event after the forgeries: once it is in, the forgeries were handled too.
    const dirty = await (async () => {
      const m = await logLength(page);
      await editor.fill('input[name=title]', 'typed after the forgeries');
      return waitEvent(page, 'dirtyChanged', { after: m });
    })();
    assert.deepEqual(dirty, { dirty: true });
    const saved = (await eventLog(page)).slice(mark).filter((e) => e.type === 'saved');
    assert.deepEqual(saved, [], 'a forged saved event reached the host');
  });

  await t.test('the editor drops host messages from a frame that is not its parent', async () => {
    // The genuine host opens the sample.
    let mark = await logLength(page);
    await page.fill('#splat-id', env.sampleSplatId);
    await page.click('#open-project');
    assert.deepEqual(await waitEvent(page, 'projectLoaded', { after: mark }), { splatId: env.sampleSplatId });

    // The foreign frame tells every frame of the page to open another scene and to clear.
    mark = await logLength(page);
    await foreign.evaluate(({ splatId }) => {
      for (const msg of [
        { source: 'splathost-host', type: 'openProject', payload: { splatId } },
        { source: 'splathost-host', type: 'createProject', payload: {} },
      ]) {
        for (let i = 0; i < window.parent.frames.length; i++) window.parent.frames[i].postMessage(msg, '*');
      }
    }, { splatId: env.formatScenes.ply });
    // Time for an obeyed command to show, then a genuine event as a barrier.
    await new Promise((r) => setTimeout(r, 3000));
    await editor.fill('input[name=title]', 'typed after the forged commands');
    assert.deepEqual(await waitEvent(page, 'dirtyChanged', { after: mark }), { dirty: true });
    const obeyed = (await eventLog(page)).slice(mark).filter((e) => ['projectLoaded', 'projectCreated'].includes(e.type));
    assert.deepEqual(obeyed, [], `a forged host command was obeyed\n${log.join('\n')}`);
    assert.equal(await editor.evaluate(() => document.documentElement.dataset.splatId), env.sampleSplatId);
  });
  await page.close();
});
