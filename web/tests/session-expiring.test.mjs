// sessionExpiring fires about 60 s before the editor's 900 s session runs out, with the
// session's expiry; the demo host answers with a fresh session. Playwright's clock jumps the
// page (and its frames) forward instead of waiting fourteen minutes.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { consoleOf, env, eventLog, launch, logLength, waitEvent } from './helpers.mjs';

let browser;
before(async () => { browser = await launch(); });
after(async () => { await browser?.close(); });

test('sessionExpiring about a minute before the session expires', async () => {
  const page = await browser.context.newPage();
  const log = consoleOf(page);
  await page.clock.install();
  await page.goto(`${env.demoUrl}/?editor=scoped`);
  await waitEvent(page, 'ready', { timeout: 90_000 });
  const minted = (await eventLog(page)).filter((e) => e.source === 'host' && e.type === 'session' && e.payload.type === 'editor');
  assert.equal(minted.length, 1);
  const expiresAt = Date.parse(minted[0].payload.expiresAt);
  const now = await page.evaluate(() => Date.now());
  const lifetime = expiresAt - now;
  assert.ok(lifetime > 880_000 && lifetime <= 900_000, `the session lives ${lifetime} ms`);

  // Up to 70 s before the expiry: nothing yet.
  let mark = await logLength(page);
  await page.clock.fastForward(lifetime - 70_000);
  // A message the editor posted would be in the log well within this (real) half second.
  await new Promise((r) => setTimeout(r, 500));
  assert.equal((await eventLog(page)).slice(mark).filter((e) => e.type === 'sessionExpiring').length, 0,
    'sessionExpiring came more than 70 s early');

  // Past 60 s before the expiry: the event, with the session's expiry.
  mark = await logLength(page);
  await page.clock.fastForward(15_000);
  const payload = await waitEvent(page, 'sessionExpiring', { after: mark }).catch((err) => {
    err.message += `\nconsole:\n${log.slice(-20).join('\n')}`;
    throw err;
  });
  assert.equal(Date.parse(payload.expiresAt), expiresAt);
  // The host renews the session in answer.
  const renewed = await waitEvent(page, 'session', { after: mark, source: 'host' });
  assert.deepEqual([renewed.type, renewed.scoped], ['editor', true]);
  await page.close();
});
