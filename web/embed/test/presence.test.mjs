// Unit tests of presence.ts's pure parts: the initials a badge shows without an avatar.
import { before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after } from 'node:test';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { build } from 'esbuild';

let dir;
let presence;
before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'splathost-presence-test-'));
  const out = join(dir, 'presence.mjs');
  await build({ entryPoints: [join(dirname(fileURLToPath(import.meta.url)), '..', 'src', 'presence.ts')], outfile: out, bundle: true, format: 'esm', platform: 'neutral', logLevel: 'warning' });
  presence = await import(pathToFileURL(out).href);
});
after(async () => { await rm(dir, { recursive: true, force: true }); });

test('initials: first letters of two words, a guest\'s number, else two characters', () => {
  const cases = [
    ['Ada Lovelace', 'AL'], ['Guest 3', 'G3'], ['Guest 12', 'G12'], ['Guest 1234', 'G1'], ['grace', 'GR'], ['  Émile   zola ', 'ÉZ'],
    ['李小龍', '李小'], ['😀 party', '😀P'], ['X', 'X'], ['', '?'], ['   ', '?'],
  ];
  for (const [name, want] of cases) assert.equal(presence.initials(name), want, name);
});
