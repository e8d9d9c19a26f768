// Real scans upright (issue 13), shared by orientation-*.test.mjs (split so each file stays
// within node's per-file time on a small machine): the standing scene is stored y-down, as 3DGS
// training leaves scans; in every format and in both engines the viewer turns it by the default
// orientation (180° about X), so its green ground lies in the lower half of the frame with the
// red column above it, on the right. levelData.orientation.rotation [0, 0, 0] shows it as
// stored: upside down. Pixels are told apart from the clear colour by their colour.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { editorPatch, env, launch, openViewer, standColours } from './helpers.mjs';

// The ground covers about a tenth of the frame; the column a few percent.
const MIN_SHARE = 0.005;

const fmt = (c) => `${(c.share * 100).toFixed(1)}% at (${c.x.toFixed(2)}, ${c.y.toFixed(2)}), ${(c.lower * 100).toFixed(0)}% in the lower half`;

/** Registers the orientation test of each format. */
export function orientationTests(formats) {
  let browser;
  before(async () => { browser = await launch(); });
  after(async () => { await browser?.close(); });

  async function look(id) {
    const { page } = await openViewer(browser.context, id);
    try {
      return await standColours(browser.context, page.mainFrame());
    } finally {
      await page.close();
    }
  }

  for (const format of formats) {
    test(`the ${format} scan shows upright, and as stored with rotation [0,0,0]`, async (t) => {
      const id = env.standScenes[format];
      assert.ok(id, `the harness made no standing ${format} scene`);

      const up = await look(id);
      t.diagnostic(`default: ground ${fmt(up.green)}; column ${fmt(up.red)}`);
      assert.ok(up.green.share > MIN_SHARE && up.red.share > MIN_SHARE, `the ${format} scene is not drawn: ${JSON.stringify(up)}`);
      assert.ok(up.green.lower > 0.8, `the ${format} ground is not in the lower half: ${fmt(up.green)}`);
      assert.ok(up.red.y < up.green.y, `the ${format} column is not above its ground`);
      assert.ok(up.red.x > up.green.x, `the ${format} column (at +x) is not right of the ground's centre: mirrored`);

      await editorPatch(id, { levelData: { version: 1, orientation: { rotation: [0, 0, 0] } } });
      try {
        const stored = await look(id);
        t.diagnostic(`[0,0,0]: ground ${fmt(stored.green)}; column ${fmt(stored.red)}`);
        assert.ok(stored.green.share > MIN_SHARE && stored.red.share > MIN_SHARE, `the ${format} scene is not drawn as stored`);
        assert.ok(stored.green.lower < 0.2, `with rotation [0,0,0] the ${format} ground should be in the upper half: ${fmt(stored.green)}`);
        assert.ok(stored.red.y > stored.green.y, `with rotation [0,0,0] the ${format} column should hang below its ground`);
      } finally {
        await editorPatch(id, { levelData: null });
      }
    });
  }
}
