// The demo host as an integrator's page: it opens on the hero scene with the editor showing it,
// a scene out of its scope reads as a message where the embeds would be, its secret key never
// reaches the browser, and the viewer it mounts counts a view of the scene it shows.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import {
  consoleOf, embedFrame, env, eventLog, eventually, launch, settled, splatOf, standColours, waitEvent,
} from './helpers.mjs';

// The hero's ground covers about a tenth of the frame, its column a few percent.
const MIN_SHARE = 0.005;

let browser;
before(async () => { browser = await launch(); });
after(async () => { await browser?.close(); });

test('the page opens on the hero scene, the editor showing it without a click', async () => {
  const page = await browser.context.newPage();
  const log = consoleOf(page);
  await page.goto(env.demoUrl);
  // The editor opens the sample as it mounts, before it is ready; nobody clicked Open project.
  const loaded = await waitEvent(page, 'projectLoaded', { timeout: 90_000 })
    .catch((err) => { err.message += `\n${log.slice(-20).join('\n')}`; throw err; });
  assert.deepEqual(loaded, { splatId: env.sampleSplatId });
  await waitEvent(page, 'ready');
  const sessions = (await eventLog(page)).filter((e) => e.source === 'host' && e.type === 'session');
  assert.deepEqual(sessions.map((e) => [e.payload.type, e.payload.scoped]), [['viewer', true], ['editor', true]]);
  assert.equal(await page.inputValue('#splat-id'), env.sampleSplatId);

  const editor = await embedFrame(page, 'editor-slot', 'editor');
  assert.equal(await editor.evaluate(() => document.documentElement.dataset.splatId), env.sampleSplatId);
  assert.equal(await editor.inputValue('input[name=title]'), (await splatOf(env.sampleSplatId)).title);
  assert.equal(await settled(editor), 'rendered');

  // The sample is the hero: a red column standing on a green ground, drawn upright.
  const viewer = await embedFrame(page, 'viewer-slot', 'viewer');
  assert.equal(await settled(viewer), 'rendered', log.join('\n'));
  assert.equal(await viewer.evaluate(() => document.documentElement.dataset.splatId), env.sampleSplatId);
  const { green, red } = await standColours(browser.context, viewer);
  assert.ok(green.share > MIN_SHARE && red.share > MIN_SHARE, `no column on a ground: ${JSON.stringify({ green, red })}`);
  assert.ok(green.lower > 0.8 && red.y < green.y, `the hero is not upright: ${JSON.stringify({ green, red })}`);
  await page.close();
});

test('a scene out of the demo\'s scope reads as a message in the embeds\' place', async () => {
  // Nobody's scene: the gateway answers another tenant's scene the same way (out of scope).
  const foreign = 'f'.repeat(24);
  const page = await browser.context.newPage();
  await page.goto(`${env.demoUrl}/?splatId=${foreign}`);
  for (const [slot, kind] of [['viewer-slot', 'viewer'], ['editor-slot', 'editor']]) {
    const box = page.locator(`#${slot} .slot-message`);
    await box.waitFor({ timeout: 30_000 });
    const text = await box.innerText();
    assert.match(text, new RegExp(`The ${kind} could not open`));
    assert.match(text, new RegExp(`Scene ${foreign} is out of this demo's scope`));
    assert.match(text, new RegExp(`not a scene open to the demo customer "${env.customer}"`));
    assert.match(text, /another tenant's or another customer's scene, or none at all/);
    assert.match(text, new RegExp(`refused the ${kind} session \\(403: `));
    assert.equal(await page.locator(`#${slot} iframe`).count(), 0, `the ${kind} box holds an embed`);
    assert.equal(await box.locator('a').getAttribute('href'), '/', 'a way back to the sample');
    // Readable: a visible box with room for the text, not a blank one.
    const size = await box.boundingBox();
    assert.ok(size.width > 200 && size.height > 100, JSON.stringify(size));
  }
  assert.equal(await page.isDisabled('#open-project'), true, 'no editor to open a project in');
  const failures = (await eventLog(page)).filter((e) => e.type === 'host-error');
  assert.equal(failures.length, 2, JSON.stringify(failures));
  await page.close();
});

test('the secret key never reaches the browser', async () => {
  assert.match(env.secretKey, /^msk_/);
  const page = await browser.context.newPage();
  // Everything the browser sends or receives while the page mounts both embeds and signs in.
  const seen = [];
  page.on('request', (req) => seen.push(
    req.url(), JSON.stringify(req.headers()), req.postData() ?? '',
  ));
  const bodies = [];
  page.on('response', (res) => bodies.push(res.body().then((b) => [res.url(), b.toString('latin1')], () => [res.url(), ''])));
  await page.goto(env.demoUrl);
  await waitEvent(page, 'ready', { timeout: 90_000 });
  await embedFrame(page, 'viewer-slot', 'viewer');
  const received = await Promise.all(bodies);
  const urls = received.map(([u]) => u);
  assert.ok(urls.some((u) => u.startsWith(`${env.demoUrl}/session`)), `no session was minted: ${urls.join(', ')}`);
  assert.ok(urls.some((u) => u.startsWith(`${env.gatewayUrl}/sdk/`)), 'the SDK came from the gateway');
  for (const [url, body] of received) assert.ok(!body.includes(env.secretKey), `the secret key is in ${url}`);
  for (const s of seen) assert.ok(!s.includes(env.secretKey), 'the secret key is in a request the browser sent');
  const dom = await page.content();
  assert.ok(!dom.includes(env.secretKey), 'the secret key is in the page');
  assert.ok(!dom.includes(env.publicKey), 'the page needs no key at all');

  // Every answer of the demo's server, including its failures.
  const answers = [
    await fetch(`${env.demoUrl}/`), await fetch(`${env.demoUrl}/demo.js`), await fetch(`${env.demoUrl}/demo.css`),
  ];
  for (const body of [
    { type: 'viewer', splatId: env.sampleSplatId, scoped: true }, { type: 'editor' }, { type: 'editor', scoped: true },
    { type: 'viewer' }, { type: 'nope' }, { type: 'viewer', splatId: 'not-an-id' }, { secretKey: true },
  ]) {
    answers.push(await fetch(`${env.demoUrl}/session`, { method: 'POST', body: JSON.stringify(body) }));
  }
  for (const res of answers) {
    const text = await res.text();
    assert.ok(!text.includes(env.secretKey), `the secret key is in ${res.url}`);
    assert.ok(![...res.headers.values()].some((v) => v.includes(env.secretKey)), `the secret key is in a header of ${res.url}`);
  }
  await page.close();
});

test('the viewer sends a view the scene counts within 10 s', async () => {
  const id = env.formatScenes.sog;
  const before = (await splatOf(id)).viewCount;
  const page = await browser.context.newPage();
  const log = consoleOf(page);
  // The contract's clock starts when the beacon is accepted (202).
  const beacon = page.waitForResponse((res) => res.url() === `${env.gatewayUrl}/api/embed/views` && res.request().method() === 'POST',
    { timeout: 90_000 });
  await page.goto(`${env.demoUrl}/?splatId=${id}`);
  const frame = await embedFrame(page, 'viewer-slot', 'viewer');
  const res = await beacon;
  assert.equal(res.status(), 202);
  assert.equal(JSON.parse(res.request().postData()).splatId, id);
  const counted = await eventually(async () => (await splatOf(id)).viewCount > before, { timeout: 10_000 });
  assert.ok(counted, `viewCount stayed at ${before} for 10 s after the beacon was accepted\n${log.join('\n')}`);
  assert.equal((await splatOf(id)).viewCount, before + 1, 'one load, one view');
  assert.equal(await settled(frame), 'rendered');
  await page.close();
});

test('the demo page shows two editors side by side on one scene, each seeing the other', async () => {
  const page = await browser.context.newPage();
  const log = consoleOf(page);
  await page.goto(`${env.demoUrl}/?pair=1`);
  const frames = [await embedFrame(page, 'pair-a-slot', 'editor'), await embedFrame(page, 'pair-b-slot', 'editor')];
  const names = ['Demo customer', 'Second demo user'];
  for (const [i, frame] of frames.entries()) {
    await frame.waitForFunction((id) => document.documentElement.dataset.splatId === id, env.sampleSplatId, { timeout: 60_000 });
    const want = [names[i], names[1 - i]];
    await frame.waitForFunction((want) => JSON.stringify([...document.querySelectorAll('[data-presence-peer]')]
      .map((el) => el.dataset.presenceName)) === JSON.stringify(want), want, { timeout: 30_000 })
      .catch((err) => { err.message += `\n${log.slice(-20).join('\n')}`; throw err; });
  }
  // Side by side: the two slots share a row.
  const [a, b] = [await page.locator('#pair-a-slot').boundingBox(), await page.locator('#pair-b-slot').boundingBox()];
  assert.ok(a.x + a.width <= b.x && Math.abs(a.y - b.y) < 1, `${JSON.stringify(a)} ${JSON.stringify(b)}`);
  await page.close();
});
