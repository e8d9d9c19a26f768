// The multiplayer room in the editor (contract item 10), end to end: editors of one scene see
// each other (names cut to 32, guests numbered, avatars), an edit in one shows in the other as
// an unsaved change within 2 s, a save in one updates both — also when the two are connected
// to two different gateway processes — and viewer sessions never join a room.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import {
  consoleOf, env, launch, mintSession, commitScene, openEditor, presenceOf, settled, splatOf,
} from './helpers.mjs';

/** The room's bound for joins, leaves and edits to show in the others' editors. */
const WITHIN = 2_000;

// A second gateway process of the same stack (the Go harness starts it): the room must fan out
// across processes.
const secondGateway = process.env.SPLATHOST_SECOND_GATEWAY_URL;

// An avatar the room shows for a user who has one, served by the test (no network here).
const AVATAR = 'http://avatars.invalid/ada.png';
const PNG_1PX = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==', 'base64');

let browser;
before(async () => {
  browser = await launch();
  await browser.context.route(AVATAR, (route) => route.fulfill({ status: 200, contentType: 'image/png', body: PNG_1PX }));
});
after(async () => { await browser?.close(); });

/** Waits until page's presence bar shows exactly `names`: its own first, then the others in
 * any order, within ms. */
async function rosterIs(page, names, ms = WITHIN) {
  const want = [names[0], ...names.slice(1).sort()];
  try {
    await page.waitForFunction((want) => {
      const els = [...document.querySelectorAll('[data-presence-peer]')];
      if (els.length === 0 || !els[0].hasAttribute('data-presence-self')) return false;
      const got = els.map((el) => el.dataset.presenceName);
      return JSON.stringify([got[0], ...got.slice(1).sort()]) === JSON.stringify(want);
    }, want, { timeout: ms, polling: 50 });
  } catch (err) {
    err.message += `\nthe bar shows ${JSON.stringify(await presenceOf(page))}\n${(page.log ?? []).slice(-20).join('\n')}`;
    throw err;
  }
}

/** Waits until the page has joined its room (its own badge is shown). */
async function joined(page) {
  await page.waitForSelector('[data-presence-self]', { timeout: 30_000 });
}

/** Waits for fn (run in page) to hold, within ms; says what it saw when it does not. */
async function within(page, fn, arg, ms, what) {
  try {
    await page.waitForFunction(fn, arg, { timeout: ms, polling: 50 });
  } catch (err) {
    err.message = `${what} did not happen within ${ms} ms (${err.message.split('\n')[0]})\n${(page.log ?? []).slice(-20).join('\n')}`;
    throw err;
  }
}

const isDirty = (page) => page.evaluate(() => document.documentElement.dataset.dirty);

test('editors of one scene see each other: names cut to 32, guests numbered, avatars', async () => {
  const id = await commitScene('ball.ply', { title: 'Room roster' });
  const long = 'Ada Augusta King, Countess of Lovelace (née Byron)';
  const cut = [...long].slice(0, 32).join('');
  assert.ok([...long].length > 32);
  const ada = await openEditor(browser.context, await mintSession('editor', id, { name: long, avatarUrl: AVATAR }));
  await joined(ada);
  await rosterIs(ada, [cut]);
  // Two sessions without a user: guests, numbered from 1.
  const g1 = await openEditor(browser.context, await mintSession('editor', id, null));
  await joined(g1);
  await rosterIs(ada, [cut, 'Guest 1']);
  const g2 = await openEditor(browser.context, await mintSession('editor', id, null));
  await joined(g2);
  await rosterIs(ada, [cut, 'Guest 1', 'Guest 2']);
  await rosterIs(g1, ['Guest 1', cut, 'Guest 2']);
  await rosterIs(g2, ['Guest 2', cut, 'Guest 1']);
  assert.equal((await presenceOf(g2)).filter((p) => p.self).length, 1, 'one badge is marked as self');
  // Ada's badge is her avatar; a guest's, their initials on their colour.
  const badge = (page, name) => page.$eval(`[data-presence-name="${name}"]`, (el) => ({
    img: el.querySelector('img')?.naturalWidth ?? 0, text: el.textContent, colour: getComputedStyle(el).backgroundColor,
  }));
  await g1.waitForFunction((n) => document.querySelector(`[data-presence-name="${n}"] img`)?.complete, cut);
  assert.equal((await badge(g1, cut)).img, 1, 'the avatar is shown');
  const guestBadge = await badge(ada, 'Guest 1');
  assert.equal(guestBadge.text, 'G1');
  assert.notEqual(guestBadge.colour, 'rgba(0, 0, 0, 0)');

  // A leave shows within 2 s; the lowest free number goes to the next guest.
  await g1.close();
  await rosterIs(ada, [cut, 'Guest 2']);
  const g3 = await openEditor(browser.context, await mintSession('editor', id, null));
  await joined(g3);
  await rosterIs(ada, [cut, 'Guest 2', 'Guest 1']);

  // The others' cameras are markers in the view, in their colour.
  await ada.waitForSelector('.splathost-peer-marker', { state: 'attached', timeout: WITHIN });
  for (const p of [ada, g2, g3]) await p.close();
});

/**
 * Two editors, a and b, on one scene: a's edits (title, a toggle, the background, the
 * orientation, an orbit) show in b as unsaved changes within 2 s; a's save clears both and b
 * adopts the saved scene; then b edits and saves and a follows.
 */
async function editTogether(a, b, id) {
  await Promise.all([joined(a), joined(b)]);
  await rosterIs(a, ['Editor A', 'Editor B']);
  await rosterIs(b, ['Editor B', 'Editor A']);
  assert.equal(await isDirty(b), 'false');

  const title = `Edited together ${Date.now()}`;
  await a.fill('input[name=title]', title);
  await within(b, (t) => document.documentElement.dataset.dirty === 'true' && document.querySelector('input[name=title]').value === t,
    title, WITHIN, "a's title in b, unsaved");
  await a.uncheck('input[name=allowComments]');
  await within(b, () => !document.querySelector('input[name=allowComments]').checked, null, WITHIN, "a's allow comments toggle in b");
  await a.$eval('input[name=background]', (el) => {
    el.value = '#336699';
    el.dispatchEvent(new Event('input', { bubbles: true }));
  });
  await within(b, () => document.querySelector('input[name=background]').value === '#336699', null, WITHIN, "a's background in b");
  await a.click('button[data-action=flip]');
  await within(b, () => document.querySelector('output[name=rotation]').value === '0° 0° 0°', null, WITHIN, "a's flip in b");
  // a's camera is a marker in b's view. b steps back (a wheel) so that a's camera, where b's
  // was, is in front of it; then an orbit in a moves the marker (and the start camera, while
  // b's own view stays).
  const bBox = await b.locator('#splathost-canvas').boundingBox();
  await b.mouse.move(bBox.x + bBox.width / 2, bBox.y + bBox.height / 2);
  await b.mouse.wheel(0, 1200);
  await within(b, () => {
    const m = document.querySelector('.splathost-peer-marker');
    return m && !m.hidden && m.style.transform;
  }, null, WITHIN, "a's camera marker in b's view");
  const before = await b.$eval('.splathost-peer-marker', (el) => el.style.transform);
  const box = await a.locator('#splathost-canvas').boundingBox();
  await a.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
  await a.mouse.down();
  await a.mouse.move(box.x + box.width / 2 + 120, box.y + box.height / 2, { steps: 6 });
  await a.mouse.up();
  await within(b, (prev) => {
    const m = document.querySelector('.splathost-peer-marker');
    return m && m.style.transform !== prev;
  }, before, WITHIN, "a's camera marker moving in b");

  await a.click('button[data-action=save]');
  await within(a, () => document.documentElement.dataset.dirty === 'false', null, 60_000, "a's save");
  await within(b, () => document.documentElement.dataset.dirty === 'false', null, WITHIN, 'the save clearing b');
  const saved = await splatOf(id);
  assert.equal(saved.title, title);
  assert.equal(saved.allowComments, false);
  assert.equal(saved.levelData.background.color, '#336699');
  assert.deepEqual(saved.levelData.orientation.rotation, [0, 0, 0]);
  assert.equal(saved.levelData.version, 1);
  assert.equal(await b.inputValue('input[name=title]'), title, 'b shows the saved scene');

  // The other way round: b's annotation and save reach a.
  await b.fill('textarea[name=description]', 'Described in B');
  await within(a, () => document.documentElement.dataset.dirty === 'true' && document.querySelector('textarea[name=description]').value === 'Described in B',
    null, WITHIN, "b's description in a, unsaved");
  await b.click('button[data-action=save]');
  await within(a, () => document.documentElement.dataset.dirty === 'false', null, 60_000, "b's save clearing a");
  assert.equal((await splatOf(id)).description, 'Described in B');
  assert.equal((await splatOf(id)).title, title, "b's save kept a's title");
}

test('an edit in one editor shows in the other within 2 s; a save in one updates both', async () => {
  const id = await commitScene('ball.ply', { title: 'Room edits' });
  const a = await openEditor(browser.context, await mintSession('editor', id, { name: 'Editor A' }));
  const b = await openEditor(browser.context, await mintSession('editor', id, { name: 'Editor B' }));
  await editTogether(a, b, id);
  await a.close();
  await b.close();
});

test('the same with the two editors on two different gateway processes', async () => {
  assert.ok(secondGateway, 'SPLATHOST_SECOND_GATEWAY_URL is not set: the Go harness starts a second gateway for this test');
  assert.notEqual(new URL(secondGateway).origin, new URL(env.gatewayUrl).origin);
  const id = await commitScene('ball.ply', { title: 'Room across gateways' });
  const a = await openEditor(browser.context, await mintSession('editor', id, { name: 'Editor A' }));
  const b = await openEditor(browser.context, await mintSession('editor', id, { name: 'Editor B' }), { gatewayUrl: secondGateway });
  // Each editor's socket goes to its own page's gateway.
  assert.equal(new URL(b.url()).origin, new URL(secondGateway).origin);
  await editTogether(a, b, id);
  await a.close();
  await b.close();
});

test('a viewer never opens a socket, and the room refuses a viewer session', async () => {
  const page = await browser.context.newPage();
  const log = consoleOf(page);
  const sockets = [];
  page.on('websocket', (ws) => sockets.push(ws.url()));
  const viewerToken = await mintSession('viewer', env.sampleSplatId);
  await page.goto(`${env.gatewayUrl}/embed/viewer?session=${encodeURIComponent(viewerToken)}`);
  assert.equal(await settled(page), 'rendered', log.join('\n'));
  await new Promise((r) => setTimeout(r, 3000));
  assert.deepEqual(sockets, [], 'the viewer opened a socket');
  // The room closes a viewer session's socket with 4403 (as a page would see it).
  const url = `${env.gatewayUrl.replace(/^http/, 'ws')}/api/embed/room?splatId=${env.sampleSplatId}&session=${encodeURIComponent(viewerToken)}`;
  const code = await page.evaluate((u) => new Promise((resolve) => {
    const ws = new WebSocket(u);
    ws.onmessage = (e) => { if (JSON.parse(e.data).type === 'welcome') resolve('welcomed'); };
    ws.onclose = (e) => resolve(e.code);
  }), url);
  assert.equal(code, 4403);
  // An editor page of the same scene does join (so the check above can fail).
  const editor = await openEditor(browser.context, await mintSession('editor', env.sampleSplatId, { name: 'Socket check' }));
  await joined(editor);
  await page.close();
  await editor.close();
});
