// The viewer's look from levelData (issue 13): background.color replaces the clear colour, and
// post.exposure changes the splats' brightness in both engines (PlayCanvas for .ply, Spark for
// .splat). Compared with the same standing scene shown without levelData.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { BACKGROUND, canvasPixels, commitScene, env, launch, openViewer } from './helpers.mjs';

let browser;
before(async () => { browser = await launch(); });
after(async () => { await browser?.close(); });

const BLUE = [0x33, 0x66, 0xcc];

/** The canvas of a scene: the share of pixels that are `colour` (±2), the default clear colour
 * (±2), and the mean green channel of the ground's pixels. */
async function measure(id) {
  const { page } = await openViewer(browser.context, id);
  try {
    const px = await canvasPixels(browser.context, page.mainFrame());
    let blue = 0, clear = 0, sum = 0, ground = 0;
    for (let i = 0; i < px.data.length; i += 4) {
      const [r, g, b] = [px.data[i], px.data[i + 1], px.data[i + 2]];
      const off = (c) => Math.max(Math.abs(r - c[0]), Math.abs(g - c[1]), Math.abs(b - c[2]));
      if (off(BLUE) <= 2) blue++;
      if (off(BACKGROUND) <= 2) clear++;
      if (g > r + 25 && g > b + 25) { sum += g; ground++; }
    }
    const n = px.data.length / 4;
    assert.ok(ground / n > 0.02, `the ground of ${id} is not drawn`);
    return { blue: blue / n, clear: clear / n, green: sum / ground };
  } finally {
    await page.close();
  }
}

for (const [format, file, engine] of [['ply', 'stand.ply', 'PlayCanvas'], ['splat', 'stand.splat', 'Spark']]) {
  test(`background colour and exposure in ${engine}`, async (t) => {
    const plain = await measure(env.standScenes[format]);
    const id = await commitScene(file, {
      title: 'Blue and dark',
      levelData: { version: 1, background: { color: '#3366cc' }, post: { exposure: -1.5, toneMapping: 'linear' } },
    });
    const look = await measure(id);
    t.diagnostic(`as stored: ${(plain.clear * 100).toFixed(1)}% clear colour, ground green ${plain.green.toFixed(1)}; ` +
      `with levelData: ${(look.blue * 100).toFixed(1)}% #3366cc, ${(look.clear * 100).toFixed(2)}% clear colour, ground green ${look.green.toFixed(1)}`);
    assert.ok(plain.clear > 0.3 && plain.blue < 0.001, 'the scene without levelData shows the default clear colour');
    assert.ok(look.blue > 0.3, `only ${(look.blue * 100).toFixed(1)}% of the ${engine} canvas is #3366cc`);
    assert.ok(look.clear < 0.001, `${(look.clear * 100).toFixed(2)}% of the ${engine} canvas is still the default clear colour`);
    // -1.5 stops: linear ×0.35, about ×0.62 in sRGB.
    assert.ok(look.green < plain.green * 0.8, `exposure -1.5 did not darken the ${engine} scene: ${plain.green.toFixed(1)} → ${look.green.toFixed(1)}`);
    assert.ok(look.green > plain.green * 0.4, `exposure -1.5 darkened the ${engine} scene too much: ${plain.green.toFixed(1)} → ${look.green.toFixed(1)}`);
  });
}
