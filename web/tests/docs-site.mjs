// The docs site in a browser (run by `go test -tags e2e ./e2e -run TestDocsSite`, not by the
// `tests/` glob of TestBrowser: it needs only a gateway). Starting at /docs/guides it opens every
// page the navigation and the pages link under /docs, and fails when a link does not answer 200,
// when its #fragment names no element of the target page, when a page loads anything from
// another host or breaks its Content-Security-Policy, or when a document of docs/ is not
// reachable. Outside links are only listed, never followed.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { launchChromium } from './browser.mjs';

const gateway = process.env.SPLATHOST_GATEWAY_URL;
const chromium = process.env.SPLATHOST_CHROMIUM;
const repo = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** Every document the site must serve: docs/*.md at /docs/<name>, docs/guides/*.md below /docs/guides. */
function documents() {
  const names = (dir) => readdirSync(join(repo, dir)).filter((f) => f.endsWith('.md')).map((f) => f.slice(0, -3));
  return [...names('docs').map((n) => `/docs/${n}`), ...names('docs/guides').map((n) => `/docs/guides/${n}`)];
}

test('every docs page opens, and every link and anchor under /docs resolves', { timeout: 240_000 }, async () => {
  assert.ok(gateway && chromium, 'SPLATHOST_GATEWAY_URL and SPLATHOST_CHROMIUM come from TestDocsSite');
  const origin = new URL(gateway).origin;
  const browser = await launchChromium(chromium);
  try {
    const page = await browser.context.newPage();
    const foreign = [];
    const problems = [];
    page.on('request', (r) => {
      const u = r.url();
      if (!u.startsWith('data:') && !u.startsWith('blob:') && new URL(u).origin !== origin) foreign.push(`${page.url()} loads ${u}`);
    });
    page.on('console', (m) => {
      if (m.type() === 'error') problems.push(`${page.url()}: console error: ${m.text()}`);
    });
    const ids = new Map(); // path -> Set of element ids
    const links = []; // {from, path, fragment}
    const queue = ['/docs/guides'];
    const seen = new Set(queue);
    const referrer = new Map([['/docs/guides', 'the start']]);
    while (queue.length) {
      const path = queue.shift();
      const res = await page.goto(origin + path, { waitUntil: 'load' });
      if (res?.status() !== 200) {
        problems.push(`${referrer.get(path)}: ${path} answers ${res?.status()}`);
        continue;
      }
      if (path === '/docs') {
        // The API reference is rendered by Redoc; its own links are Redoc's business.
        await page.waitForSelector('[data-section-id^="operation/"]', { timeout: 60_000 });
        ids.set(path, new Set(await page.$$eval('[id]', (els) => els.map((e) => e.id))));
        continue;
      }
      const found = await page.evaluate(() => ({
        ids: [...document.querySelectorAll('[id]')].map((e) => e.id),
        hrefs: [...document.querySelectorAll('a[href]')].map((a) => a.href),
      }));
      ids.set(path, new Set(found.ids));
      for (const href of found.hrefs) {
        const u = new URL(href);
        if (u.origin !== origin || !(u.pathname === '/docs' || u.pathname.startsWith('/docs/'))) continue;
        const fragment = decodeURIComponent(u.hash.slice(1));
        links.push({ from: path, path: u.pathname, fragment });
        if (u.pathname.startsWith('/docs/assets/')) continue;
        if (!seen.has(u.pathname)) {
          seen.add(u.pathname);
          referrer.set(u.pathname, path);
          queue.push(u.pathname);
        }
      }
    }
    for (const l of links) {
      if (l.path.startsWith('/docs/assets/')) {
        const r = await browser.context.request.get(origin + l.path);
        if (r.status() !== 200) problems.push(`${l.from}: ${l.path} answers ${r.status()}`);
        continue;
      }
      const targetIds = ids.get(l.path);
      if (!targetIds) continue; // its own failure is listed already
      if (l.fragment && !targetIds.has(l.fragment)) problems.push(`${l.from}: ${l.path}#${l.fragment}: no such anchor`);
    }
    for (const doc of documents()) {
      if (!ids.has(doc)) problems.push(`${doc} (from ${doc.startsWith('/docs/guides/') ? 'docs/guides' : 'docs'}) is not reachable from /docs/guides`);
    }
    assert.deepEqual([...problems, ...foreign], [], `the docs site has problems:\n${[...problems, ...foreign].join('\n')}`);
    assert.ok(links.length > 50, `only ${links.length} links checked`);
    console.log(`# docs site: ${ids.size} pages opened, ${links.length} links under /docs checked`);
  } finally {
    await browser.close();
  }
});
