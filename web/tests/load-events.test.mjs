// The viewer's load events (docs/embeds.md, "Load events"): a host page on another origin
// mounts the viewer with the SDK and receives `firstFrame` and `fullDetail` with the bytes the
// embed's page had fetched and the milliseconds since it started, the same figures the page
// writes on its <html>. The page loads what the first frame needs side by side (the engine
// preloaded by the HTML, the scene record requested once, by boot.js), and the engines come
// compressed.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { consoleOf, env, launch, mintSession } from './helpers.mjs';

let server;
let host;
before(async () => {
  // The host: an integrator's page on its own origin that mounts the viewer with the SDK served
  // by the gateway and keeps every event it receives.
  server = createServer((req, res) => {
    const token = new URL(req.url, 'http://host').searchParams.get('session');
    res.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8' });
    res.end(`<!doctype html><title>host</title>
<div id="slot" style="width:800px;height:600px"></div>
<script type="module">
  import { mountViewer, VIEWER_EVENTS } from '${env.gatewayUrl}/sdk/splathost-embed.js';
  window.events = [];
  const viewer = mountViewer(document.getElementById('slot'), { baseUrl: '${env.gatewayUrl}', sessionToken: ${JSON.stringify(token)} });
  for (const name of VIEWER_EVENTS) viewer.on(name, (payload) => window.events.push({ type: name, payload }));
</script>`);
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  host = `http://127.0.0.1:${server.address().port}`;
});
after(() => server?.close());

// A LOD scene loads coarse first, so its events come apart; a file's come together. Spark draws
// .splat, PlayCanvas the others.
for (const [format, engine] of [['ply', 'engine-playcanvas.js'], ['lod', 'engine-playcanvas.js'], ['splat', 'engine-spark.js']]) {
  test(`the viewer of a ${format} scene posts firstFrame and fullDetail with its bytes and time`, async (t) => {
    const id = env.formatScenes[format];
    assert.ok(id, `the harness made no ${format} scene`);
    const token = await mintSession('viewer', id);
    // A new empty profile for each scene, so nothing comes from the cache: the figures are a
    // first visit's.
    const browser = await launch();
    const page = await browser.context.newPage();
    const log = consoleOf(page);
    try {
      await page.goto(`${host}/?session=${encodeURIComponent(token)}`);
      const events = async () => page.evaluate(() => window.events);
      await page.waitForFunction(() => window.events?.some((e) => e.type === 'fullDetail'), null, { timeout: 180_000 })
        .catch(async (err) => assert.fail(`no fullDetail: ${JSON.stringify(await events())}\n${log.join('\n')}\n${err}`));
      await page.waitForFunction(() => window.events.some((e) => e.type === 'ready'), null, { timeout: 180_000 });
      const got = await events();
      const of = (type) => got.filter((e) => e.type === type).map((e) => e.payload);
      const [first] = of('firstFrame');
      const [full] = of('fullDetail');
      t.diagnostic(`firstFrame ${JSON.stringify(first)}, fullDetail ${JSON.stringify(full)}`);
      assert.equal(of('firstFrame').length, 1, 'firstFrame fires once');
      assert.equal(of('fullDetail').length, 1, 'fullDetail fires once');
      assert.ok(got.findIndex((e) => e.type === 'firstFrame') < got.findIndex((e) => e.type === 'fullDetail'), 'firstFrame comes first');
      for (const f of [first, full]) {
        assert.ok(Number.isInteger(f.bytes) && Number.isInteger(f.ms), JSON.stringify(f));
        assert.ok(f.ms > 0 && f.ms < 600_000, JSON.stringify(f));
      }
      assert.ok(full.bytes >= first.bytes && full.ms >= first.ms, 'fullDetail is no earlier and no smaller');

      const frame = await (await page.$('#slot iframe')).contentFrame();
      // The page writes the same figures on <html>.
      const marks = await frame.evaluate(() => ({ ...document.documentElement.dataset }));
      assert.equal(marks.splathostFirstFrameBytes, String(first.bytes));
      assert.equal(marks.splathostFirstFrameMs, String(first.ms));
      assert.equal(marks.splathostFullDetailBytes, String(full.bytes));
      assert.equal(marks.splathostFullDetailMs, String(full.ms));

      const entries = await frame.evaluate(() => performance.getEntriesByType('resource').map((e) => ({
        name: new URL(e.name).pathname, start: e.startTime, end: e.responseEnd, transfer: e.transferSize,
        encoded: e.encodedBodySize, decoded: e.decodedBodySize,
      })));
      const nav = await frame.evaluate(() => performance.getEntriesByType('navigation')[0].transferSize);
      // The bytes are what the page had fetched by then, its document included: no more than
      // all it has fetched now. (Which entries had reached the timeline at the frame itself
      // the browser does not say: it files them a little after they end.)
      const now = nav + entries.reduce((n, e) => n + e.transfer, 0);
      assert.ok(nav > 0 && first.bytes > nav && full.bytes <= now, `firstFrame ${first.bytes} B, fullDetail ${full.bytes} B; the page: ${nav} B, all fetched now: ${now} B`);

      // The engine came compressed, and is in the first frame's bytes.
      const eng = entries.find((e) => e.name === `/embed/assets/${engine}`);
      assert.ok(eng, `no ${engine} among ${entries.map((e) => e.name).join(' ')}`);
      assert.ok(eng.decoded > 1_000_000 && eng.encoded < eng.decoded / 2, `${engine}: ${eng.encoded} B sent for ${eng.decoded} B`);
      assert.ok(first.bytes >= nav + eng.transfer && eng.transfer > eng.encoded,
        `firstFrame's ${first.bytes} B leave out the page's ${nav} B or the engine's ${eng.transfer} B`);

      // What the first frame needs is asked for side by side: the HTML preloads PlayCanvas
      // before the page's module has named its chunks, and the scene record is fetched once
      // (boot.js's request is the one the viewer reads).
      const pc = entries.find((e) => e.name === '/embed/assets/engine-playcanvas.js');
      const chunk = entries.find((e) => e.name.startsWith('/embed/assets/chunks/'));
      assert.ok(pc && chunk && pc.start <= chunk.start, `the engine was not preloaded: ${JSON.stringify([pc, chunk])}`);
      const records = entries.filter((e) => e.name === `/api/embed/splats/${id}`);
      assert.equal(records.length, 1, `the scene record was fetched ${records.length} times`);
    } finally {
      await browser.close();
    }
  });
}
