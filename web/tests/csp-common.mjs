// What the Content Security Policy tests (csp-*.test.mjs, docs/security.md) share: every
// document of every page (a demo page and its cross-origin embed frames) records each violation
// the browser reports before any of its own script runs, and the console's CSP reports (workers
// included) count too.
import assert from 'node:assert/strict';
import { launch, settled } from './helpers.mjs';

/** Starts Chromium (helpers.launch) with the recorder in every document it loads. */
export async function launchRecording() {
  const browser = await launch();
  await browser.context.addInitScript(() => {
    const seen = [];
    Object.defineProperty(window, '__cspViolations', { value: seen });
    document.addEventListener('securitypolicyviolation', (e) => seen.push(
      `${location.origin}${location.pathname}: ${e.effectiveDirective} blocked ${e.blockedURI || '(inline)'}`
      + ` at ${e.sourceFile || '?'}:${e.lineNumber} ${e.sample}`,
    ), true);
  });
  return browser;
}

/** Watches a page for CSP reports: its frames' recorded events, and what the console says
 * (Chromium prints every violation, also a worker's). Returns {violations(), log, policies}:
 * policies maps each HTML document's URL path to the policy it was served with. */
export function watch(page) {
  const log = [];
  const reports = [];
  const policies = new Map();
  const note = (m) => {
    log.push(`[${m.type()}] ${m.text()}`);
    if (/Content Security Policy/i.test(m.text())) reports.push(`[console] ${m.text()}`);
  };
  page.on('console', note);
  page.on('pageerror', (e) => log.push(`[pageerror] ${e.message}`));
  page.on('worker', (w) => w.on('console', note));
  page.on('response', async (res) => {
    if (res.request().resourceType() === 'document') {
      policies.set(new URL(res.url()).pathname, (await res.allHeaders())['content-security-policy'] ?? '');
    }
  });
  return {
    log,
    policies,
    async violations() {
      const out = [...reports];
      for (const f of page.frames()) {
        out.push(...await f.evaluate(() => window.__cspViolations ?? []).catch(() => []));
      }
      return out;
    },
  };
}

/** A policy that allows no inline script or style and no eval (the wasm compile alone). */
export function assertStrict(policy, what) {
  assert.ok(policy, `${what} has no Content-Security-Policy`);
  assert.match(policy, /(^|; )script-src [^;]*'self'/, `${what}: ${policy}`);
  assert.match(policy, /(^|; )object-src 'none'/, `${what}: ${policy}`);
  assert.match(policy, /(^|; )base-uri 'none'/, `${what}: ${policy}`);
  assert.doesNotMatch(policy, /'unsafe-inline'|'unsafe-eval'|'unsafe-hashes'/, `${what}: ${policy}`);
}

export async function noViolations(w, what) {
  const v = await w.violations();
  assert.deepEqual(v, [], `${what}: CSP violations\n${w.log.slice(-30).join('\n')}`);
}


/** Waits until the embed in frame settled (helpers.settled), then fails on any violation
 * before anything else, so a page the policy broke says what was blocked. */
export async function settledClean(frame, w, what) {
  const state = await settled(frame).catch(async (err) => {
    err.message += `\nCSP violations:\n${(await w.violations()).join('\n')}\n${w.log.slice(-20).join('\n')}`;
    throw err;
  });
  await noViolations(w, what);
  assert.equal(state, 'rendered', `${what}\n${w.log.slice(-20).join('\n')}`);
}
