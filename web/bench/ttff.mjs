// The browser half of the time-to-first-frame benchmark (issue 14, `make bench` runs it through
// bin/bench): opens each viewer page of the plan in a fresh Chromium (cold cache, new profile)
// and prints one JSON line per page: the time from navigation to the viewer's first drawn frame
// (its 'rendered' status, set once the canvas shows the scene), and the bytes the page fetched
// before it and in all.
//
// Input, SPLATHOST_TTFF_PLAN: {"chromium": path, "timeoutMs": n, "latencyMs": n,
// "pages": [{"variant", "url", "mbps"}]}; mbps > 0 throttles the page's network to that many
// megabits per second (0: loopback, as fast as the machine).
import { launchChromium } from '../tests/browser.mjs';

const plan = JSON.parse(process.env.SPLATHOST_TTFF_PLAN ?? 'null');
if (!plan?.chromium || !Array.isArray(plan.pages)) {
  console.error('SPLATHOST_TTFF_PLAN must hold {chromium, pages: [{variant, url}]}: bin/bench sets it');
  process.exit(2);
}

// Stamps the wall-clock time at which the embed reports its first frame (data-splathost).
function stampRendered() {
  const done = () => {
    const s = document.documentElement?.dataset.splathost;
    if ((s === 'rendered' || s === 'error') && !window.__splathostSettled) {
      window.__splathostSettled = { status: s, at: performance.timeOrigin + performance.now() };
    }
  };
  // The <html> element does not exist yet when this runs: watch the whole document.
  new MutationObserver(done).observe(document, { attributes: true, subtree: true, childList: true, attributeFilter: ['data-splathost'] });
}

for (const { variant, url, mbps = 0 } of plan.pages) {
  const browser = await launchChromium(plan.chromium);
  const finished = [];
  try {
    const page = await browser.context.newPage();
    const log = [];
    page.on('console', (m) => log.push(`[${m.type()}] ${m.text()}`));
    page.on('pageerror', (e) => log.push(`[pageerror] ${e.message}`));
    page.on('requestfinished', (req) => {
      const at = Date.now();
      finished.push(req.sizes().then((s) => ({ at, bytes: s.responseBodySize + s.responseHeadersSize }), () => ({ at, bytes: 0 })));
    });
    await page.addInitScript(stampRendered);
    if (mbps > 0) {
      // A client's link rather than loopback: Chromium's own network emulation (DevTools'
      // throttling), so every fetch of the page shares the bandwidth as on a real line.
      const cdp = await browser.context.newCDPSession(page);
      await cdp.send('Network.enable');
      await cdp.send('Network.emulateNetworkConditions', {
        offline: false, latency: plan.latencyMs ?? 20, downloadThroughput: (mbps * 1e6) / 8, uploadThroughput: (mbps * 1e6) / 8,
      });
    }
    await page.goto(url);
    const origin = await page.evaluate(() => performance.timeOrigin);
    const timeoutMs = plan.timeoutMs ?? 600_000;
    let settled;
    try {
      const handle = await page.waitForFunction(() => window.__splathostSettled, null, { timeout: timeoutMs, polling: 100 });
      settled = await handle.jsonValue();
    } catch (err) {
      if (err?.name !== 'TimeoutError') throw err;
      // No frame within the bound: reported as such (the time a lower bound), not as a failure.
      settled = { status: 'timeout', at: origin + timeoutMs };
      const status = await page.evaluate(() => document.documentElement.dataset.splathost).catch(() => '?');
      console.error(`${variant}: no first frame within ${timeoutMs} ms (status ${status}); console:\n${log.slice(-20).join('\n')}`);
    }
    const sizes = await Promise.all(finished);
    const before = sizes.filter((s) => s.at <= settled.at + 50).reduce((n, s) => n + s.bytes, 0);
    const total = sizes.reduce((n, s) => n + s.bytes, 0);
    console.log(JSON.stringify({
      variant, mbps, status: settled.status, ttffMs: Math.round(settled.at - origin), bytesBeforeFirstFrame: before, bytesTotal: total,
    }));
  } finally {
    await browser.close();
  }
}
