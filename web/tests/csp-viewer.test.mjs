// The viewer under its Content Security Policy (docs/security.md): a scene of every format
// renders (PlayCanvas and Spark, their WebAssembly and their workers) with not one violation; a
// viewer the policy broke also fails on its canvas.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { canvasCoverage, embedFrame, env } from './helpers.mjs';
import { assertStrict, launchRecording, noViolations, settledClean, watch } from './csp-common.mjs';

let browser;
before(async () => { browser = await launchRecording(); });
after(async () => { await browser?.close(); });

for (const format of ['ply', 'compressed-ply', 'splat', 'ksplat', 'sog', 'lod']) {
  test(`the viewer renders a ${format} scene (its engine's wasm and workers) with no CSP violation`, async () => {
    const page = await browser.context.newPage();
    const w = watch(page);
    await page.goto(`${env.demoUrl}/?splatId=${env.formatScenes[format]}`);
    const frame = await embedFrame(page, 'viewer-slot', 'viewer');
    await settledClean(frame, w, format);
    assertStrict(w.policies.get('/embed/viewer'), 'the viewer page');
    assert.ok((await canvasCoverage(browser.context, frame)).drawn > 0.005, 'the viewer drew the scene');
    await noViolations(w, format);
    await page.close();
  });
}

