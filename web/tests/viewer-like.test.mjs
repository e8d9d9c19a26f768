// The viewer's like button (issue 13): shown where the scene allows reactions; a click likes
// (POST .../like), a second unlikes (DELETE .../like); the count is the server's and the
// visitor's own state survives a reload (localStorage).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { commitScene, eventually, launch, openViewer, settled, splatOf } from './helpers.mjs';

let browser;
before(async () => { browser = await launch(); });
after(async () => { await browser?.close(); });

test('the like button likes and unlikes, and remembers the visitor', async () => {
  const id = await commitScene('stand.ply', { title: 'Likes' });
  const { page, log } = await openViewer(browser.context, id);
  try {
    const like = page.locator('button[data-action="like"]');
    const count = like.locator('[data-like-count]');
    assert.equal(await like.getAttribute('aria-pressed'), 'false');
    assert.equal(await count.textContent(), '0');
    await like.click();
    assert.ok(await eventually(async () => (await like.getAttribute('aria-pressed')) === 'true'), log.join('\n'));
    assert.equal(await count.textContent(), '1');
    assert.equal((await splatOf(id)).likeCount, 1);

    await page.reload();
    assert.equal(await settled(page.mainFrame()), 'rendered');
    assert.equal(await like.getAttribute('aria-pressed'), 'true', 'the like is remembered');
    assert.equal(await count.textContent(), '1');
    await like.click();
    assert.ok(await eventually(async () => (await like.getAttribute('aria-pressed')) === 'false'), `unlike failed:\n${log.join('\n')}`);
    assert.equal(await count.textContent(), '0');
    assert.equal((await splatOf(id)).likeCount, 0);
  } finally {
    await page.close();
  }
});
