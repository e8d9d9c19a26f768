// Unit tests of the editor's side of the room's authority (src/authority.ts): which announced
// save it adopts, and which replaced token rejoins the room. The module is bundled by esbuild
// (as the page gets it) into a temporary file and imported from there.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { build } from 'esbuild';

const src = join(dirname(fileURLToPath(import.meta.url)), '..', 'src', 'authority.ts');
let dir;
let authority;
before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'splathost-authority-test-'));
  const out = join(dir, 'authority.mjs');
  await build({ entryPoints: [src], outfile: out, bundle: true, format: 'esm', platform: 'neutral', logLevel: 'warning' });
  authority = await import(pathToFileURL(out).href);
});
after(async () => { await rm(dir, { recursive: true, force: true }); });

test('an announced save is adopted only when newer than the scene held', () => {
  const at = (t) => ({ id: 'x', updatedAt: t });
  // Someone else's save, after what this editor loaded.
  assert.equal(authority.isNewerSave(at('2026-11-27T10:00:01.000Z'), at('2026-11-27T10:00:00.000Z')), true);
  // This editor's own save: it holds the PATCH's answer already.
  assert.equal(authority.isNewerSave(at('2026-11-27T10:00:01.000Z'), at('2026-11-27T10:00:01.000Z')), false);
  // An announcement overtaken by a later save (the thumbnail's, say).
  assert.equal(authority.isNewerSave(at('2026-11-27T10:00:01.000Z'), at('2026-11-27T10:00:02.500Z')), false);
  // Without both times there is nothing to compare: adopt.
  assert.equal(authority.isNewerSave({ id: 'x' }, at('2026-11-27T10:00:02.500Z')), true);
  assert.equal(authority.isNewerSave(at('not a time'), at('2026-11-27T10:00:02.500Z')), true);
});

test('a replaced token rejoins the room when its rights may differ', () => {
  const { rightsChanged } = authority;
  assert.equal(rightsChanged({}, {}), false);
  assert.equal(rightsChanged({ externalUserId: 'ada' }, { externalUserId: 'ada', exp: 2 }), false);
  assert.equal(rightsChanged({}, { externalUserId: 'ada' }), true, 'a guest signed in');
  assert.equal(rightsChanged({ externalUserId: 'ada' }, { externalUserId: 'bob' }), true);
  assert.equal(rightsChanged({}, { coEdit: true }), true, 'invited to co-edit');
  assert.equal(rightsChanged({ coEdit: true }, { coEdit: false }), true);
  assert.equal(rightsChanged(null, null), false);
});
