// Shared pieces of the browser tests. They run under `go test -tags e2e ./e2e -run TestBrowser`, which
// starts the stack and the demo host and passes their addresses in SPLATHOST_* variables.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { launchChromium } from './browser.mjs';

function need(name) {
  const v = process.env[name];
  if (!v) {
    throw new Error(`${name} is not set: run the browser tests through \`go test -tags e2e ./e2e -run TestBrowser\` (make test does)`);
  }
  return v;
}

// A test file runs in its own process under node's runner; should the runner die (a killed
// `go test`), end too rather than drive a browser for nobody.
const runner = process.ppid;
setInterval(() => { if (process.ppid !== runner) process.exit(1); }, 1000).unref();

/** What the Go harness prepared. */
export const env = {
  chromium: need('SPLATHOST_CHROMIUM'),
  gatewayUrl: need('SPLATHOST_GATEWAY_URL'),
  demoUrl: need('SPLATHOST_DEMO_URL'),
  publicKey: need('SPLATHOST_DEMO_PUBLIC_KEY'),
  secretKey: need('SPLATHOST_DEMO_SECRET_KEY'),
  customer: need('SPLATHOST_DEMO_CUSTOMER'),
  sampleSplatId: need('SPLATHOST_SAMPLE_SPLAT_ID'),
  formatScenes: JSON.parse(need('SPLATHOST_FORMAT_SCENES')),
  standScenes: JSON.parse(need('SPLATHOST_STAND_SCENES')),
  fixtureDir: need('SPLATHOST_FIXTURE_DIR'),
};

/** The viewer's and editor's clear colour (the UI contract). */
export const BACKGROUND = [32, 32, 36];

export const SPLAT_ID = /^[0-9a-f]{24}$/;

/** Starts Chromium (browser.mjs) as the harness's SPLATHOST_CHROMIUM. */
export const launch = (options = {}) => launchChromium(env.chromium, options);

/** Records what the page's frames print, to explain a failure. */
export function consoleOf(page) {
  const lines = [];
  page.on('console', (m) => lines.push(`[${m.type()}] ${m.text()}`));
  page.on('pageerror', (e) => lines.push(`[pageerror] ${e.message}`));
  return lines;
}

/** The frame of the embed mounted in the demo page's slot, once it shows the embed page. */
export async function embedFrame(page, slot, kind) {
  const handle = await page.waitForSelector(`#${slot} iframe`, { timeout: 30_000 });
  const frame = await handle.contentFrame();
  await frame.waitForURL(new RegExp(`/embed/${kind}\\?`), { timeout: 30_000 });
  await frame.waitForLoadState('domcontentloaded');
  // An error page (401, 403, 410) has no boot data: say what it shows instead of waiting.
  const boot = await frame.evaluate(() => document.getElementById('splathost-boot')?.textContent ?? null);
  if (!boot) {
    const text = await frame.evaluate(() => `${document.title}: ${document.body?.innerText ?? ''}`);
    throw new Error(`the ${kind} embed shows no embed page: ${text.slice(0, 300)}`);
  }
  return frame;
}

/** Waits until the embed says it drew the scene or failed; returns which. */
export async function settled(frame, timeout = 120_000) {
  await frame.waitForFunction(
    () => ['rendered', 'error'].includes(document.documentElement.dataset.splathost),
    null, { timeout, polling: 250 },
  );
  return frame.evaluate(() => document.documentElement.dataset.splathost);
}

// The embed's overlays (hotspots, the annotation card, the viewer's buttons): hidden while the
// canvas is screenshot, so measurements see only what the engine drew.
const OVERLAYS = '.splathost-hotspots, .splathost-card, .splathost-controls';

/**
 * The embed canvas's pixels as the screen shows them, overlays hidden: a screenshot decoded by
 * the browser itself (a 2D canvas in a blank page), so no image library is needed. Returns
 * {width, height, data (RGBA bytes, rows top down), at(x, y) → [r, g, b]}.
 */
export async function canvasPixels(context, frame) {
  const hide = (v) => frame.evaluate(({ sel, v }) => { for (const el of document.querySelectorAll(sel)) el.style.visibility = v; }, { sel: OVERLAYS, v });
  await hide('hidden');
  const png = await frame.locator('#splathost-canvas').screenshot();
  await hide('');
  const { width, height, data } = await decodePixels(context, `data:image/png;base64,${png.toString('base64')}`);
  return {
    width, height, data,
    at(x, y) {
      const i = 4 * (Math.round(y) * width + Math.round(x));
      return [data[i], data[i + 1], data[i + 2]];
    },
  };
}

/**
 * Screenshots the embed's canvas and measures it: the fraction of pixels that differ from the
 * clear colour by more than `tolerance` in some channel, and the fraction that is the clear
 * colour.
 */
export async function canvasCoverage(context, frame, tolerance = 12) {
  const { width, height, data: d } = await canvasPixels(context, frame);
  let drawn = 0;
  let background = 0;
  for (let i = 0; i < d.length; i += 4) {
    const off = Math.max(Math.abs(d[i] - BACKGROUND[0]), Math.abs(d[i + 1] - BACKGROUND[1]), Math.abs(d[i + 2] - BACKGROUND[2]));
    if (off > tolerance) drawn++;
    if (off <= 2) background++;
  }
  const n = d.length / 4;
  return { width, height, drawn: drawn / n, background: background / n };
}

/** Decodes the image at url (a data: URL, or one readable cross-origin, as asset URLs are)
 * in a blank page of the browser, so no image library is needed; returns {width, height, data
 * (RGBA bytes, rows top down)}. */
export async function decodePixels(context, url) {
  const page = await context.newPage();
  try {
    const { width, height, b64 } = await page.evaluate(async (src) => {
      const res = await fetch(src);
      if (!res.ok) throw new Error(`GET ${src.slice(0, 80)}: ${res.status}`);
      const img = await createImageBitmap(await res.blob());
      const c = document.createElement('canvas');
      c.width = img.width;
      c.height = img.height;
      const g = c.getContext('2d', { willReadFrequently: true });
      g.drawImage(img, 0, 0);
      const d = g.getImageData(0, 0, c.width, c.height).data;
      let bin = '';
      for (let i = 0; i < d.length; i += 0x8000) bin += String.fromCharCode(...d.subarray(i, i + 0x8000));
      return { width: c.width, height: c.height, b64: btoa(bin) };
    }, url);
    return { width, height, data: Buffer.from(b64, 'base64') };
  } finally {
    await page.close();
  }
}

/** The demo page's event log so far: {source, type, payload} in order. */
export function eventLog(page) {
  return page.$$eval('#event-log li', (lis) => lis.map((li) => ({
    source: li.dataset.source, type: li.dataset.type, payload: JSON.parse(li.dataset.payload),
  })));
}

/**
 * Waits for the first `type` entry from `source` after index `after` of the event log and
 * returns its payload. An editor `error` or a host failure in between ends the wait with that
 * message, so a broken step says why instead of timing out.
 */
export async function waitEvent(page, type, { after = 0, source = 'editor', timeout = 60_000 } = {}) {
  const handle = await page.waitForFunction(({ type, after, source }) => {
    const lis = [...document.querySelectorAll('#event-log li')].slice(after);
    for (const li of lis) {
      if (li.dataset.source === source && li.dataset.type === type) return { payload: JSON.parse(li.dataset.payload) };
      if (li.dataset.type === 'host-error' || (li.dataset.type === 'error' && type !== 'error')) {
        return { failure: `${li.dataset.source} ${li.dataset.type} ${li.dataset.payload}` };
      }
    }
    return null;
  }, { type, after, source }, { timeout, polling: 100 });
  const got = await handle.jsonValue();
  if (got.failure) throw new Error(`waiting for ${source} ${type}: the log shows ${got.failure}`);
  return got.payload;
}

/** How many entries the event log has (a mark for waitEvent's `after`). */
export function logLength(page) {
  return page.$$eval('#event-log li', (lis) => lis.length);
}

/** Calls the gateway's REST API as the demo's server does (secret + public key + customer). */
export async function rest(method, path, body) {
  const res = await fetch(env.gatewayUrl + path, {
    method,
    headers: {
      Authorization: `Bearer ${env.secretKey}`, 'X-Service-Public-Key': env.publicKey,
      'X-Service-External-User-Id': env.customer,
      ...(body === undefined ? {} : { 'Content-Type': 'application/json' }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, body: await res.json() };
}

/** A scene of the demo customer, through the REST API. */
export async function splatOf(id) {
  const r = await rest('GET', `/api/v1/splats/${id}`);
  if (r.status !== 200) throw new Error(`GET splat ${id}: ${r.status} ${JSON.stringify(r.body)}`);
  return r.body.splat;
}

/** Polls fn until it returns a truthy value or the time is up; returns the last value. */
export async function eventually(fn, { timeout = 10_000, interval = 200 } = {}) {
  const end = Date.now() + timeout;
  for (;;) {
    const v = await fn();
    if (v || Date.now() >= end) return v;
    await new Promise((r) => setTimeout(r, interval));
  }
}

/**
 * Mints an embed session as the integrator's server does (secret key, server side), scoped to
 * the demo customer; returns the token.
 */
export async function mintSession(type, splatId, user = { name: 'Browser test' }) {
  const res = await fetch(`${env.gatewayUrl}/api/editor/embed-sessions`, {
    method: 'POST',
    headers: {
      Authorization: `Bearer ${env.secretKey}`, 'X-Service-External-User-Id': env.customer,
      'Content-Type': 'application/json',
    },
    body: JSON.stringify({ publicKey: env.publicKey, type, ...(splatId ? { splatId } : {}), user }),
  });
  const body = await res.json();
  if (res.status !== 201) throw new Error(`minting a ${type} session: ${res.status} ${JSON.stringify(body)}`);
  return body.sessionToken;
}

/** PATCHes a scene of the demo customer through an editor session (the route that takes
 * levelData); returns the scene as the answer has it. */
export async function editorPatch(splatId, body) {
  const token = await mintSession('editor', splatId);
  const res = await fetch(`${env.gatewayUrl}/api/embed/editor/splats/${splatId}`, {
    method: 'PATCH',
    headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
    body: JSON.stringify(body),
  });
  const out = await res.json();
  if (res.status !== 200) throw new Error(`PATCH ${splatId}: ${res.status} ${JSON.stringify(out)}`);
  return out.splat;
}

/** Opens the viewer page of a scene at the top level of a new page (no host); returns the page
 * once the viewer settled, failing with the page's console when it did not render. */
export async function openViewer(context, splatId) {
  const token = await mintSession('viewer', splatId);
  const page = await context.newPage();
  const log = consoleOf(page);
  await page.goto(`${env.gatewayUrl}/embed/viewer?session=${encodeURIComponent(token)}`);
  const state = await settled(page.mainFrame());
  if (state !== 'rendered') {
    await page.close();
    throw new Error(`the viewer did not render ${splatId}:\n${log.join('\n')}`);
  }
  return { page, log };
}

/**
 * Finds the standing scene's two colours on the embed's canvas: for the green ground and the
 * red column, how many pixels (as a fraction), their centroid (0..1 of the width and height, y
 * down) and the fraction of them in the lower half of the frame.
 */
export async function standColours(context, frame) {
  return classifyStand(await canvasPixels(context, frame));
}

/** standColours of any RGBA picture ({width, height, data}): a viewer's canvas or a poster. */
export function classifyStand({ width, height, data: d }) {
  const acc = () => ({ n: 0, x: 0, y: 0, lower: 0 });
  const green = acc();
  const red = acc();
  for (let i = 0; i < d.length; i += 4) {
    const [r, g, b] = [d[i], d[i + 1], d[i + 2]];
    const a = g - Math.max(r, b) > 60 ? green : r - Math.max(g, b) > 60 ? red : null;
    if (!a) continue;
    const p = i / 4;
    const y = Math.floor(p / width);
    a.n++;
    a.x += p % width;
    a.y += y;
    if (y >= height / 2) a.lower++;
  }
  const n = d.length / 4;
  const out = (a) => ({
    share: a.n / n, x: a.n ? a.x / a.n / width : NaN, y: a.n ? a.y / a.n / height : NaN, lower: a.n ? a.lower / a.n : NaN,
  });
  return { width, height, green: out(green), red: out(red) };
}

const CONTENT_TYPES = { ply: 'application/ply', splat: 'application/splat', ksplat: 'application/ksplat', sog: 'application/sog' };

/**
 * Uploads a file of the fixture directory and commits it as a new scene of the demo customer
 * (the REST calls an integrator's server makes); with levelData, sets it through an editor
 * session. Returns the new scene's id.
 */
export async function commitScene(fileName, { title = fileName, levelData } = {}) {
  const data = await readFile(join(env.fixtureDir, fileName));
  const contentType = CONTENT_TYPES[fileName.split('.').pop()];
  const up = await rest('POST', '/api/v1/uploads/splat-file', { fileName, contentType, fileSize: data.length });
  if (up.status !== 200) throw new Error(`upload ticket: ${up.status} ${JSON.stringify(up.body)}`);
  const put = await fetch(up.body.uploadUrl, {
    method: 'PUT', body: data,
    headers: { 'Content-Type': contentType, 'Cache-Control': 'public, max-age=31536000, immutable' },
  });
  if (!put.ok) throw new Error(`upload PUT: ${put.status}`);
  const r = await rest('POST', '/api/v1/splats', { title, splatUrl: up.body.fileUrl });
  if (r.status !== 201) throw new Error(`commit: ${r.status} ${JSON.stringify(r.body)}`);
  if (levelData !== undefined) await editorPatch(r.body.splatId, { levelData });
  return r.body.splatId;
}

/** Opens the editor page of a session on its own (not framed: it posts no events) at
 * gatewayUrl; returns the page once the scene is drawn. */
export async function openEditor(context, token, { gatewayUrl = env.gatewayUrl } = {}) {
  const page = await context.newPage();
  const log = consoleOf(page);
  await page.goto(`${gatewayUrl}/embed/editor?session=${encodeURIComponent(token)}`);
  const state = await settled(page);
  if (state !== 'rendered') throw new Error(`the editor shows ${state}:\n${log.join('\n')}`);
  page.log = log;
  return page;
}

/** The names the editor's presence bar shows, self first, and which one is self. */
export function presenceOf(page) {
  return page.$$eval('[data-presence-peer]', (els) => els.map((el) => ({
    name: el.dataset.presenceName, self: el.hasAttribute('data-presence-self'),
  })));
}
