// The viewer embed, mounted by the demo host page through the SDK, renders a scene of each of
// the six formats (.ply plain and compressed, .splat, .ksplat, .sog, LOD): the canvas shows the
// clear colour and, over a real part of it, the scene.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { canvasCoverage, consoleOf, embedFrame, env, launch, settled } from './helpers.mjs';

// The test ball covers about 13-16% of the canvas once drawn (a blank or clear-only
// canvas is at 0); the clear colour still shows around it.
const MIN_DRAWN = 0.05;
const MIN_BACKGROUND = 0.2;

let browser;
before(async () => { browser = await launch(); });
after(async () => { await browser?.close(); });

for (const format of ['ply', 'compressed-ply', 'splat', 'ksplat', 'sog', 'lod']) {
  test(`viewer renders the ${format} scene`, async (t) => {
    const id = env.formatScenes[format];
    assert.ok(id, `the harness made no ${format} scene`);
    const page = await browser.context.newPage();
    const log = consoleOf(page);
    try {
      await page.goto(`${env.demoUrl}/?splatId=${id}`);
      const frame = await embedFrame(page, 'viewer-slot', 'viewer');
      const state = await settled(frame);
      assert.equal(state, 'rendered', `the viewer did not render the ${format} scene:\n${log.join('\n')}`);
      assert.equal(await frame.evaluate(() => document.documentElement.dataset.splatId), id);
      const cov = await canvasCoverage(browser.context, frame);
      t.diagnostic(`${cov.width}x${cov.height}: ${(cov.drawn * 100).toFixed(1)}% drawn, ${(cov.background * 100).toFixed(1)}% clear colour`);
      assert.ok(cov.width > 100 && cov.height > 100, `canvas too small: ${cov.width}x${cov.height}`);
      assert.ok(cov.background > MIN_BACKGROUND,
        `only ${(cov.background * 100).toFixed(1)}% of the ${format} canvas is the clear colour rgb(32,32,36)`);
      assert.ok(cov.drawn > MIN_DRAWN,
        `the ${format} canvas is blank: ${(cov.drawn * 100).toFixed(2)}% of pixels differ from the clear colour`);
    } finally {
      await page.close();
    }
  });
}
