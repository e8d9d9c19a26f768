// Unit tests of the SDK's multipart uploader against a fake service and store behind an
// injected fetch: what it sends (routes, auth, exact part ranges), its progress and uploadId
// events, retries, and a resume after a "page reload" (a new uploader given only the uploadId).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createUploader, UploadError } from '../../dist/sdk/splathost-embed.js';

const BASE = 'https://api.example.com';
const STORE = 'https://store.example.com';
const PART = 5;

// fakeService answers the four multipart routes and stores parts; failPut(n, attempt) may
// return a status to answer a part PUT with instead of storing it.
function fakeService({ partSize = PART, failPut = () => 0, hideEtag = false } = {}) {
  const calls = [];
  const uploads = new Map();
  let next = 1;
  const json = (status, body) => new Response(JSON.stringify(body), { status, headers: { 'Content-Type': 'application/json' } });
  const signed = (id, n) => ({ partNumber: n, uploadUrl: `${STORE}/${id}?partNumber=${n}` });
  const putAttempts = new Map();
  async function fetch(url, init = {}) {
    const u = new URL(url);
    const method = init.method ?? 'GET';
    calls.push({ method, url: u.href, headers: init.headers ?? {}, body: init.body });
    if (u.origin === STORE) {
      const id = u.pathname.slice(1);
      const n = Number(u.searchParams.get('partNumber'));
      const attempt = (putAttempts.get(n) ?? 0) + 1;
      putAttempts.set(n, attempt);
      const fail = failPut(n, attempt);
      if (fail) return new Response('<Error/>', { status: fail });
      const bytes = new Uint8Array(await init.body.arrayBuffer());
      const up = uploads.get(id);
      if (bytes.length !== Math.min(up.partSize, up.size - (n - 1) * up.partSize)) return new Response('', { status: 403 });
      up.parts.set(n, bytes);
      return new Response('', { status: 200, headers: hideEtag ? {} : { ETag: `"etag-${n}"` } });
    }
    const path = u.pathname.replace(/^\/api\/(v1|embed\/editor)\/uploads\/splat-file/, '');
    if (method === 'POST' && path === '') {
      const req = JSON.parse(init.body);
      assert.equal(req.multipart, true);
      const id = 'up' + next++;
      uploads.set(id, { size: req.fileSize, partSize, parts: new Map(), completed: false, req });
      const count = Math.ceil(req.fileSize / partSize);
      return json(200, { status: 'success', uploadId: id, fileUrl: `${STORE}/file/${id}`, partSize,
        parts: Array.from({ length: count }, (_, i) => signed(id, i + 1)), expiresAt: '2030-01-01T00:00:00.000Z' });
    }
    const [, id, action] = path.split('/');
    const up = uploads.get(id);
    if (!up) return json(404, { status: 'error', message: 'upload not found' });
    const count = Math.ceil(up.size / up.partSize);
    if (method === 'GET') {
      const parts = [...up.parts.keys()].sort((a, b) => a - b).map((n) => ({ partNumber: n, etag: `etag-${n}`,
        size: up.parts.get(n).length, uploadUrl: signed(id, n).uploadUrl }));
      const missing = [];
      for (let n = 1; n <= count; n++) if (!up.parts.has(n)) missing.push(signed(id, n));
      return json(200, { status: 'success', uploadId: id, state: up.completed ? 'completed' : 'uploading', fileUrl: `${STORE}/file/${id}`,
        fileSize: up.size, partSize: up.partSize, parts, missingParts: missing, expiresAt: '2030-01-01T00:00:00.000Z' });
    }
    if (method === 'POST' && action === 'complete') {
      const { parts } = JSON.parse(init.body);
      assert.deepEqual(parts.map((p) => p.partNumber), Array.from({ length: count }, (_, i) => i + 1));
      for (const p of parts) if (p.etag !== `etag-${p.partNumber}`) return json(400, { status: 'error', message: 'bad etag' });
      up.completed = true;
      return json(200, { status: 'success', uploadId: id, fileUrl: `${STORE}/file/${id}` });
    }
    if (method === 'DELETE') {
      uploads.delete(id);
      return json(200, { status: 'success' });
    }
    return json(404, { status: 'error', message: 'route not found' });
  }
  return { fetch, calls, uploads };
}

function sceneFile(size, name = 'scene.ply') {
  const bytes = Uint8Array.from({ length: size }, (_, i) => i % 251);
  const blob = new Blob([bytes]);
  return { file: { name, size, type: '', slice: (a, b) => blob.slice(a, b) }, bytes };
}
const partPuts = (calls) => calls.filter((c) => c.method === 'PUT').map((c) => Number(new URL(c.url).searchParams.get('partNumber')));

test('upload sends every part once with its exact bytes, reports progress and completes', async () => {
  const svc = fakeService();
  const { file, bytes } = sceneFile(23); // parts of 5, 5, 5, 5, 3
  const up = createUploader({ baseUrl: BASE + '/', secretKey: 'msk_x', publicKey: 'mpk_y', externalUserId: 'eu-1', concurrency: 2, fetch: svc.fetch });
  const events = [];
  up.on('uploadId', (e) => events.push(['id', e.uploadId]));
  up.on('progress', (p) => events.push(['progress', p.bytesDone, p.partsDone, p.partsTotal]));
  const res = await up.upload(file);
  assert.deepEqual(res, { uploadId: 'up1', fileUrl: `${STORE}/file/up1` });
  const start = svc.calls[0];
  assert.equal(start.url, BASE + '/api/v1/uploads/splat-file');
  assert.equal(start.headers.Authorization, 'Bearer msk_x');
  assert.equal(start.headers['X-Service-Public-Key'], 'mpk_y');
  assert.equal(start.headers['X-Service-External-User-Id'], 'eu-1');
  assert.deepEqual(JSON.parse(start.body), { fileName: 'scene.ply', contentType: 'application/ply', fileSize: 23, multipart: true });
  assert.deepEqual(partPuts(svc.calls).sort(), [1, 2, 3, 4, 5]);
  const stored = svc.uploads.get('up1').parts;
  const joined = Buffer.concat([1, 2, 3, 4, 5].map((n) => Buffer.from(stored.get(n))));
  assert.deepEqual(new Uint8Array(joined), bytes);
  assert.deepEqual(events[0], ['id', 'up1']);
  const progress = events.filter((e) => e[0] === 'progress');
  assert.deepEqual(progress[0], ['progress', 0, 0, 5]);
  assert.deepEqual(progress.at(-1), ['progress', 23, 5, 5]);
  for (let i = 1; i < progress.length; i++) assert.ok(progress[i][1] > progress[i - 1][1], 'progress only grows');
  assert.equal(svc.uploads.get('up1').completed, true);
});

test('a session uploader uses the editor routes and its bearer only', async () => {
  const svc = fakeService();
  const { file } = sceneFile(7, 'a.splat');
  await createUploader({ baseUrl: BASE, sessionToken: 'sess', fetch: svc.fetch }).upload(file);
  assert.equal(svc.calls[0].url, BASE + '/api/embed/editor/uploads/splat-file');
  assert.deepEqual(svc.calls[0].headers, { Authorization: 'Bearer sess', 'Content-Type': 'application/json' });
  assert.equal(JSON.parse(svc.calls[0].body).contentType, 'application/splat');
  assert.throws(() => createUploader({ baseUrl: BASE, secretKey: 'msk_x' }), /sessionToken/);
});

test('an aborted upload resumes after a reload from the uploadId alone, sending only the missing parts', async () => {
  const svc = fakeService();
  const { file, bytes } = sceneFile(23);
  const ac = new AbortController();
  const first = createUploader({ baseUrl: BASE, sessionToken: 's', concurrency: 1, fetch: svc.fetch });
  let kept = null;
  first.on('uploadId', (e) => { kept = e.uploadId; });
  first.on('progress', (p) => { if (p.partsDone === 2) ac.abort(); });
  await assert.rejects(first.upload(file, { signal: ac.signal }), (err) => err.name === 'AbortError');
  assert.equal(kept, 'up1');
  assert.deepEqual([...svc.uploads.get('up1').parts.keys()].sort(), [1, 2]);

  svc.calls.length = 0;
  const second = createUploader({ baseUrl: BASE, sessionToken: 's', concurrency: 3, fetch: svc.fetch });
  const progress = [];
  second.on('progress', (p) => progress.push(p.bytesDone));
  const res = await second.upload(file, { uploadId: kept });
  assert.equal(res.fileUrl, `${STORE}/file/up1`);
  assert.equal(svc.calls[0].method, 'GET');
  assert.deepEqual(partPuts(svc.calls).sort(), [3, 4, 5], 'stored parts are not sent again');
  assert.equal(progress[0], 10, 'a resumed upload starts at what is stored');
  assert.equal(progress.at(-1), 23);
  const stored = svc.uploads.get('up1').parts;
  assert.deepEqual(new Uint8Array(Buffer.concat([1, 2, 3, 4, 5].map((n) => Buffer.from(stored.get(n))))), bytes);
  // Resuming a completed upload just answers its fileUrl; another file's size is refused.
  assert.equal((await second.upload(file, { uploadId: kept })).fileUrl, `${STORE}/file/up1`);
  await assert.rejects(second.upload(sceneFile(24).file, { uploadId: kept }), /23-byte file/);
});

test('a part answered 5xx is retried; a 4xx is not, and fails the upload', async () => {
  let svc = fakeService({ failPut: (n, attempt) => (n === 2 && attempt < 3 ? 503 : 0) });
  await createUploader({ baseUrl: BASE, sessionToken: 's', fetch: svc.fetch, attempts: 4 }).upload(sceneFile(12).file);
  assert.equal(partPuts(svc.calls).filter((n) => n === 2).length, 3);

  svc = fakeService({ failPut: (n) => (n === 3 ? 403 : 0) });
  await assert.rejects(createUploader({ baseUrl: BASE, sessionToken: 's', fetch: svc.fetch, concurrency: 1 }).upload(sceneFile(12).file),
    (err) => err instanceof UploadError && err.status === 403);
  assert.equal(partPuts(svc.calls).filter((n) => n === 3).length, 1);
  assert.equal(svc.uploads.get('up1').completed, false);
});

test('etags hidden by CORS come from the listing; service errors carry status and message; abort deletes', async () => {
  const svc = fakeService({ hideEtag: true });
  const up = createUploader({ baseUrl: BASE, sessionToken: 's', fetch: svc.fetch });
  const res = await up.upload(sceneFile(11).file);
  assert.equal(svc.uploads.get(res.uploadId).completed, true);
  await assert.rejects(up.upload(sceneFile(11).file, { uploadId: 'nope' }),
    (err) => err instanceof UploadError && err.status === 404 && err.message === 'upload not found');
  await up.abort(res.uploadId);
  assert.equal(svc.uploads.has(res.uploadId), false);
  assert.equal(svc.calls.at(-1).method, 'DELETE');
});

test('on resume a stored part that verifyPart rejects is sent again; the others are not', async () => {
  const svc = fakeService();
  const { file, bytes } = sceneFile(23);
  const ac = new AbortController();
  const first = createUploader({ baseUrl: BASE, sessionToken: 's', concurrency: 1, fetch: svc.fetch });
  first.on('progress', (p) => { if (p.partsDone === 3) ac.abort(); });
  let id = null;
  first.on('uploadId', (e) => { id = e.uploadId; });
  await assert.rejects(first.upload(file, { signal: ac.signal }));
  svc.uploads.get(id).parts.get(2).fill(0); // the store kept part 2 with other bytes
  svc.calls.length = 0;
  const checked = [];
  const verifyPart = async (blob, etag) => {
    checked.push(etag);
    const n = Number(etag.slice(5));
    const stored = svc.uploads.get(id).parts.get(n);
    return Buffer.from(await blob.arrayBuffer()).equals(Buffer.from(stored));
  };
  await createUploader({ baseUrl: BASE, sessionToken: 's', fetch: svc.fetch, verifyPart }).upload(file, { uploadId: id });
  assert.deepEqual(checked.sort(), ['etag-1', 'etag-2', 'etag-3']);
  assert.deepEqual(partPuts(svc.calls).sort(), [2, 4, 5]);
  const stored = svc.uploads.get(id).parts;
  assert.deepEqual(new Uint8Array(Buffer.concat([1, 2, 3, 4, 5].map((n) => Buffer.from(stored.get(n))))), bytes);
});

test('with keys, a retried start carries one Idempotency-Key across its attempts; a session sends none', async () => {
  const svc = fakeService();
  let failed = 0;
  const flaky = async (url, init = {}) => {
    // The first start is answered 502 as if its answer was lost; the retry must be the same request.
    if ((init.method ?? 'GET') === 'POST' && new URL(url).pathname.endsWith('/splat-file') && failed++ === 0) {
      svc.calls.push({ method: 'POST', url, headers: init.headers ?? {}, body: init.body });
      return new Response(JSON.stringify({ status: 'error', message: 'bad gateway' }), { status: 502 });
    }
    return svc.fetch(url, init);
  };
  const keyed = { baseUrl: BASE, secretKey: 'msk_x', publicKey: 'mpk_x', externalUserId: 'eu', fetch: flaky, attempts: 3 };
  await createUploader(keyed).upload(sceneFile(12).file);
  const starts = svc.calls.filter((c) => c.method === 'POST' && c.url.endsWith('/api/v1/uploads/splat-file'));
  assert.equal(starts.length, 2, 'the start was retried once');
  const keys = starts.map((c) => c.headers['Idempotency-Key']);
  assert.match(keys[0], /^[\x21-\x7e]{1,255}$/);
  assert.equal(keys[1], keys[0], 'the retry replays the same key');
  // A second upload is another logical request: another key.
  await createUploader(keyed).upload(sceneFile(12).file);
  const third = svc.calls.filter((c) => c.method === 'POST' && c.url.endsWith('/api/v1/uploads/splat-file')).at(-1);
  assert.notEqual(third.headers['Idempotency-Key'], keys[0]);

  const browser = fakeService();
  await createUploader({ baseUrl: BASE, sessionToken: 's', fetch: browser.fetch }).upload(sceneFile(12).file);
  assert.ok(browser.calls.every((c) => !('Idempotency-Key' in c.headers)), 'no key on the session routes (CORS)');
});
