// The demo host as an integrator's page: its secret key never reaches the browser, and the
// viewer it mounts counts a view of the scene it shows.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { consoleOf, embedFrame, env, eventually, launch, settled, splatOf, waitEvent } from './helpers.mjs';

let browser;
before(async () => { browser = await launch(); });
after(async () => { await browser?.close(); });

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
