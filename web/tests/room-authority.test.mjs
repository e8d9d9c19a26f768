// The server-authoritative room in the editor (docs/security.md, "A server-authoritative room"):
// a guest whose host opened a public scene in its editor sees the owner's changes live but is
// offered no editing control; a guest the integrator minted with coEdit edits with the owner;
// and a save by the owner reaches both as the stored scene. The guests' editors are framed by a
// host page on its own origin (as an integrator's page frames them), which opens the scene with
// openProject: a guest session is minted without a scene.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { commitScene, consoleOf, editorPatch, env, launch, mintSession, openEditor, splatOf } from './helpers.mjs';

/** The room's bound for an edit to show in the others' editors. */
const WITHIN = 2_000;
const gatewayOrigin = new URL(env.gatewayUrl).origin;

let HOST;
let server;
let browser;
before(async () => {
  // The host page frames the editor whose URL is its ?src=.
  server = createServer((req, res) => {
    const src = (new URL(req.url, 'http://x').searchParams.get('src') ?? '').replaceAll('&', '&amp;').replaceAll('"', '&quot;');
    res.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8' });
    res.end(`<!doctype html><title>host</title><iframe id="editor" src="${src}" style="width:900px;height:700px;border:0"></iframe>`);
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  HOST = `http://127.0.0.1:${server.address().port}`;
  browser = await launch();
});
after(async () => {
  await browser?.close();
  server?.close();
});

/** Mints a guest editor session (no EU, no scene), as an integrator does for an anonymous
 * visitor; with coEdit for the scene coEditSplatId when given (a grant names its one scene). */
async function guestSession(name, coEditSplatId = '') {
  const res = await fetch(`${env.gatewayUrl}/api/editor/embed-sessions`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${env.secretKey}`, 'Content-Type': 'application/json' },
    body: JSON.stringify({ publicKey: env.publicKey, type: 'editor', user: { name }, ...(coEditSplatId ? { coEdit: true, splatId: coEditSplatId } : {}) }),
  });
  const body = await res.json();
  assert.equal(res.status, 201, JSON.stringify(body));
  return body.sessionToken;
}

/** Frames a guest's editor in the host page and has the host open splatId in it; returns the
 * page and the editor's frame once it has joined the scene's room. */
async function framedGuest(token, splatId) {
  const page = await browser.context.newPage();
  const log = consoleOf(page);
  const src = `${env.gatewayUrl}/embed/editor?session=${encodeURIComponent(token)}`;
  await page.goto(`${HOST}/host?src=${encodeURIComponent(src)}`);
  const frame = await (await page.waitForSelector('#editor', { timeout: 30_000 })).contentFrame();
  await frame.waitForFunction(() => document.documentElement.dataset.dirty !== undefined, null, { timeout: 60_000 });
  await page.evaluate(({ splatId, origin }) => {
    document.getElementById('editor').contentWindow.postMessage(
      { source: 'splathost-host', type: 'openProject', payload: { splatId } }, origin);
  }, { splatId, origin: gatewayOrigin });
  try {
    await frame.waitForSelector('[data-presence-self]', { timeout: 60_000 });
  } catch (err) {
    err.message += `\n${log.join('\n')}`;
    throw err;
  }
  return { page, frame, log };
}

/** Waits for fn (run in frame) to hold within ms; says what did not happen. */
async function within(frame, fn, arg, ms, what, log = []) {
  try {
    await frame.waitForFunction(fn, arg, { timeout: ms, polling: 50 });
  } catch (err) {
    err.message = `${what} did not happen within ${ms} ms (${err.message.split('\n')[0]})\n${log.slice(-20).join('\n')}`;
    throw err;
  }
}

const titleIs = (t) => document.querySelector('input[name=title]').value === t;

test('a guest sees the owner edit, read-only; a co-edit guest edits with the owner', async () => {
  const id = await commitScene('ball.ply', { title: 'Room authority' });
  await editorPatch(id, { visibility: 'public' });
  const owner = await openEditor(browser.context, await mintSession('editor', id, { name: 'Owner' }));
  await owner.waitForSelector('[data-presence-self]', { timeout: 30_000 });
  const guest = await framedGuest(await guestSession('Visitor'), id);
  const co = await framedGuest(await guestSession('Invited', id), id);
  try {
    // The owner edits; co-editing is on.
    assert.equal(await owner.evaluate(() => document.documentElement.dataset.readOnly), 'false');
    // The guest is told it views only, and no editing control takes input.
    await within(guest.frame, () => document.documentElement.dataset.readOnly === 'true', null, WITHIN, 'the read-only mode', guest.log);
    assert.equal(await guest.frame.isVisible('.splathost-read-only'), true, 'the notice is shown');
    for (const sel of ['input[name=title]', 'textarea[name=description]', '[data-action=save]', '[data-action=publish]',
      '[data-action=add-annotation]', '[data-action=flip]', 'input[name=background]']) {
      assert.equal(await guest.frame.$eval(sel, (el) => !!el.closest('[inert]')), true, `${sel} is inert`);
    }
    assert.equal(await guest.frame.$eval('[data-action=go-start-camera]', (el) => !!el.closest('[inert]')), false, 'looking around stays');
    await assert.rejects(guest.frame.fill('input[name=title]', 'A stranger', { timeout: 1000 }), 'the guest cannot type a title');
    // The co-edit guest may edit.
    assert.equal(await co.frame.evaluate(() => document.documentElement.dataset.readOnly), 'false');

    // The owner's edit shows in both guests as an unsaved change.
    await owner.fill('input[name=title]', 'Owner typed');
    for (const g of [guest, co]) await within(g.frame, titleIs, 'Owner typed', WITHIN, "the owner's title", g.log);
    // The co-edit guest's edit shows in the owner's and the read-only guest's editors.
    await co.frame.fill('textarea[name=description]', 'Invited wrote this');
    for (const [f, log] of [[owner, owner.log], [guest.frame, guest.log]]) {
      await within(f, () => document.documentElement.dataset.dirty === 'true'
        && document.querySelector('textarea[name=description]').value === 'Invited wrote this', null, WITHIN, "the co-editor's description", log);
    }
    // The owner saves: both guests adopt the stored scene and are clean.
    await owner.click('button[data-action=save]');
    await within(owner, () => document.documentElement.dataset.dirty === 'false', null, 60_000, "the owner's save", owner.log);
    for (const g of [guest, co]) {
      await within(g.frame, () => document.documentElement.dataset.dirty === 'false', null, WITHIN, 'the save reaching a guest', g.log);
    }
    const saved = await splatOf(id);
    assert.equal(saved.title, 'Owner typed');
    assert.equal(saved.description, 'Invited wrote this');
    assert.equal(await owner.inputValue('input[name=title]'), 'Owner typed', 'the saver keeps its form');
  } finally {
    await owner.close();
    await guest.page.close();
    await co.page.close();
  }
});
