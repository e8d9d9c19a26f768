// The demo host receives the editor's events, with the right payloads, through one session of
// an integrator's page: a guest is asked to sign in, the signed-in customer opens, edits, saves,
// publishes and duplicates a scene, hits the storage allocation and then saves a new scene.
// Each step checks the event against what the REST API says happened.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import {
  SPLAT_ID, consoleOf, embedFrame, env, eventLog, launch, logLength, rest, settled, splatOf, waitEvent,
} from './helpers.mjs';

// The demo's own allocation for its customer (cmd/demo), restored after the quota step.
const DEMO_LIMIT_BYTES = 256 << 20;

let browser;
let page;
let editor;
let log;
before(async () => {
  browser = await launch();
  page = await browser.context.newPage();
  log = consoleOf(page);
});
after(async () => {
  await rest('PUT', '/api/v1/external-user', { limitBytes: DEMO_LIMIT_BYTES });
  await browser?.close();
});

/** Runs step, then waits for the editor event `type` that it causes; returns its payload. */
async function expectEvent(type, step, opts = {}) {
  const mark = await logLength(page);
  await step();
  try {
    return await waitEvent(page, type, { after: mark, ...opts });
  } catch (err) {
    err.message += `\nevent log: ${JSON.stringify((await eventLog(page)).slice(mark))}\nconsole:\n${log.slice(-30).join('\n')}`;
    throw err;
  }
}

test('editor events reach the demo host', async (t) => {
  await t.test('ready', async () => {
    // ?editor=guest: the page's editor starts as a blank guest instead of signed in on the sample.
    const payload = await expectEvent('ready', () => page.goto(`${env.demoUrl}/?editor=guest`), { timeout: 90_000 });
    assert.equal(payload, null);
    editor = await embedFrame(page, 'editor-slot', 'editor');
  });

  await t.test('dirtyChanged when a guest types a title', async () => {
    const payload = await expectEvent('dirtyChanged', () => editor.fill('input[name=title]', 'Guest draft'));
    assert.deepEqual(payload, { dirty: true });
  });

  await t.test('authRequired when a guest saves', async () => {
    assert.equal(await page.isDisabled('#sign-in'), true, 'sign-in waits for authRequired');
    const payload = await expectEvent('authRequired', () => editor.click('button[data-action=save]'));
    assert.equal(payload.action, 'save');
    assert.equal(typeof payload.message, 'string');
    assert.equal(await page.isDisabled('#sign-in'), false, 'the host offers to sign in');
  });

  await t.test('projectLoaded after signing in and opening the sample', async () => {
    const mark = await logLength(page);
    await page.click('#sign-in');
    await waitEvent(page, 'signedIn', { after: mark, source: 'host' });
    const sessions = (await eventLog(page)).slice(mark).filter((e) => e.type === 'session');
    assert.deepEqual(sessions.map((e) => [e.payload.type, e.payload.scoped]), [['editor', true]]);
    assert.equal(await page.inputValue('#splat-id'), env.sampleSplatId);
    const payload = await expectEvent('projectLoaded', () => page.click('#open-project'));
    assert.deepEqual(payload, { splatId: env.sampleSplatId });
    const sample = await splatOf(env.sampleSplatId);
    assert.equal(await editor.inputValue('input[name=title]'), sample.title);
    assert.equal(await editor.evaluate(() => document.documentElement.dataset.splatId), env.sampleSplatId);
  });

  const title = `Renamed in the browser ${Date.now()}`;
  await t.test('dirtyChanged, saved and clean again after an edit', async () => {
    assert.deepEqual(await expectEvent('dirtyChanged', () => editor.fill('input[name=title]', title)), { dirty: true });
    const mark = await logLength(page);
    const saved = await expectEvent('saved', () => editor.click('button[data-action=save]'));
    // An existing scene's save may name it; it must not name another one.
    assert.ok(saved.splatId === undefined || saved.splatId === null || saved.splatId === env.sampleSplatId,
      `saved names ${saved.splatId}`);
    assert.deepEqual(await waitEvent(page, 'dirtyChanged', { after: mark }), { dirty: false });
    assert.equal((await splatOf(env.sampleSplatId)).title, title, 'the save reached the scene');
  });

  await t.test('published', async () => {
    const payload = await expectEvent('published', () => editor.click('button[data-action=publish]'));
    assert.deepEqual(payload, { splatId: env.sampleSplatId, visibility: 'public' });
    assert.equal((await splatOf(env.sampleSplatId)).visibility, 'public');
  });

  await t.test('cloned by Duplicate, and the copy is opened', async () => {
    const payload = await expectEvent('cloned', () => editor.click('button[data-action=duplicate]'), { timeout: 90_000 });
    assert.equal(payload.sourceSplatId, env.sampleSplatId);
    assert.match(payload.splatId, SPLAT_ID);
    assert.notEqual(payload.splatId, env.sampleSplatId);
    const copy = await splatOf(payload.splatId);
    assert.equal(copy.title, `${title} (Copy)`);
    assert.equal(copy.remixedFrom, null, 'a same-owner duplicate is no remix');
    assert.equal(copy.visibility, 'private');
    await editor.waitForFunction((id) => document.documentElement.dataset.splatId === id, payload.splatId);
    // The editor stays busy (its buttons disabled) until the copy is drawn.
    assert.equal(await settled(editor), 'rendered');
    await editor.waitForFunction(() => !document.querySelector('button[data-action=save]').disabled, null, { timeout: 60_000 });
  });

  const file = join(env.fixtureDir, 'ball.ply');
  const fileSize = (await readFile(file)).length;
  await t.test('limitReached when an upload exceeds the customer allocation', async () => {
    const usage = await rest('GET', '/api/v1/external-user/usage');
    assert.equal(usage.status, 200);
    const used = usage.body.usage.storage.usedBytes;
    // Room for less than the file: the upload must be refused, and nothing archived (the limit
    // stays above what is used).
    const limit = used + Math.floor(fileSize / 2);
    const put = await rest('PUT', '/api/v1/external-user', { limitBytes: limit });
    assert.equal(put.status, 200, JSON.stringify(put.body));
    await editor.setInputFiles('input[type=file][name=scene-file]', file);
    const payload = await expectEvent('limitReached', () => editor.click('button[data-action=save]'));
    assert.equal(payload.dimension, 'storageBytes');
    assert.equal(payload.scope, 'customer');
    assert.equal(payload.usedBytes, used);
    assert.equal(payload.limitBytes, limit);
    if (payload.requestedBytes !== undefined) assert.equal(payload.requestedBytes, fileSize);
  });

  await t.test('saved names the new scene once the allocation allows it', async () => {
    const put = await rest('PUT', '/api/v1/external-user', { limitBytes: DEMO_LIMIT_BYTES });
    assert.equal(put.status, 200, JSON.stringify(put.body));
    // The new scene's first save also attaches a thumbnail of the canvas, charged with it.
    const thumbnails = [];
    const onRequest = (r) => { if (r.url().endsWith('/api/embed/editor/uploads/splat-images')) thumbnails.push(r.postDataJSON().thumbnail); };
    page.on('request', onRequest);
    const payload = await expectEvent('saved', () => editor.click('button[data-action=save]'), { timeout: 90_000 });
    page.off('request', onRequest);
    assert.match(payload.splatId, SPLAT_ID);
    const scene = await splatOf(payload.splatId);
    assert.equal(thumbnails.length, 1, 'one thumbnail');
    assert.ok(scene.imageUrl, 'the new scene has a thumbnail');
    assert.equal(scene.fileSizeBytes, fileSize + thumbnails[0].fileSize);
    assert.equal(scene.splatType, 'file');
    assert.equal(await page.inputValue('#splat-id'), payload.splatId, 'the host followed the new scene');
  });

  await t.test('projectCreated clears to a blank canvas', async () => {
    const payload = await expectEvent('projectCreated', () => page.click('#create-project'));
    assert.equal(payload, null);
    assert.equal(await editor.evaluate(() => document.documentElement.dataset.splatId), '');
    assert.equal(await editor.inputValue('input[name=title]'), '');
  });

  await t.test('no error along the way', async () => {
    const errors = (await eventLog(page)).filter((e) => e.type === 'error' || e.type === 'host-error');
    assert.deepEqual(errors, []);
  });
});
