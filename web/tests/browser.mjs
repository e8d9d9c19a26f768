// Chromium as the browser tests and the browser benchmark (web/bench) drive it: Debian's
// Chromium, software WebGL, a fresh profile each launch.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium } from 'playwright-core';

// The flags that work for Debian's Chromium on a machine without a GPU or a network (DESIGN.md):
// WebGL2 through SwiftShader, and nothing that phones home.
const ARGS = [
  '--headless=new', '--no-sandbox', '--enable-unsafe-swiftshader', '--use-angle=swiftshader',
  '--ignore-gpu-blocklist', '--disable-background-networking', '--disable-component-update',
  '--disable-sync', '--no-first-run',
];

/**
 * Starts Chromium with a new empty profile; returns its context and a close function that also
 * removes the profile. A test that fails keeps the browser's console in its failure output.
 */
export async function launchChromium(executablePath, options = {}) {
  const profile = await mkdtemp(join(tmpdir(), 'splathost-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath, headless: true, args: ARGS,
    viewport: { width: 1280, height: 900 }, ...options,
  });
  return {
    context,
    async close() {
      await context.close();
      await rm(profile, { recursive: true, force: true });
    },
  };
}

