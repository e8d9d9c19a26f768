// The docs site's build (site.mjs) on the repository's docs/ and on broken copies of it: every
// document renders, every JSON code block of the docs parses, and a link to a missing document
// or heading fails the build instead of shipping.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildSite, listPages, slug } from '../site.mjs';

const repo = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');

/** A scratch copy of the repository's docs/ to break. */
function scratch() {
  const dir = mkdtempSync(join(tmpdir(), 'splathost-docs-'));
  cpSync(join(repo, 'docs'), join(dir, 'docs'), { recursive: true });
  return dir;
}

test('every document renders, with anchors GitHub would make', () => {
  const dist = mkdtempSync(join(tmpdir(), 'splathost-docs-dist-'));
  try {
    const urls = buildSite(dist, repo);
    assert.ok(urls.includes('/docs/guides/webhooks') && urls.includes('/docs/operations'), urls.join(' '));
    const html = readFileSync(join(dist, 'docs', 'site', 'guides', 'webhooks.html'), 'utf8');
    assert.match(html, /<h2 id="ordering-events-by-sequence">/);
    assert.match(html, /href="\/docs\/benchmarks#webhooks"/, 'a relative .md link becomes a site path');
    assert.doesNotMatch(html, /href="[^"]*\.md[#"]/, 'no .md link is left');
  } finally {
    rmSync(dist, { recursive: true, force: true });
  }
  assert.equal(slug('Fault and abuse suite (make chaos)'), 'fault-and-abuse-suite-make-chaos');
  assert.equal(slug('Room: a server-authoritative room'), 'room-a-server-authoritative-room');
});

test('every JSON code block in the docs parses', () => {
  let blocks = 0;
  for (const p of listPages(repo)) {
    for (const m of p.text.matchAll(/^```json\n([\s\S]*?)^```/gm)) {
      blocks++;
      assert.doesNotThrow(() => JSON.parse(m[1]), `${p.file}: a JSON block does not parse:\n${m[1]}`);
    }
  }
  assert.ok(blocks > 0, 'the docs have JSON blocks');
});

for (const [what, from, to, message] of [
  ['a link to a missing document', '[embeds.md](../embeds.md)', '[embeds.md](../embedz.md)', /names no document/],
  ['a link to a missing heading', '(../embeds.md#pages)', '(../embeds.md#no-such-heading)', /#no-such-heading is no heading/],
]) {
  test(`${what} fails the build`, () => {
    const dir = scratch();
    try {
      const guide = join(dir, 'docs', 'guides', 'embedding.md');
      const text = readFileSync(guide, 'utf8');
      assert.ok(text.includes(from), `the embedding guide has ${from}`);
      writeFileSync(guide, text.replace(from, to));
      assert.throws(() => buildSite(join(dir, 'dist'), dir), message);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
}
