// Unit tests of the SDK's uploader against a fake service and store behind an injected fetch:
// what it sends (routes, auth, exact part ranges), its progress and uploadId events, retries,
// and a resume after a "page reload" (a new uploader given only the uploadId). The single-PUT
// path below the multipart minimum runs against a local HTTP server standing for the service
// and the store, over the real fetch.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { createUploader, UploadError, MULTIPART_MIN_BYTES } from '../../dist/sdk/splathost-embed.js';

const BASE = 'https://api.example.com';
const STORE = 'https://store.example.com';
const PART = 5;
// The fake's parts are 5 bytes: the multipart tests lower the threshold so their small files go
// in parts (the real service takes parts from 5 MiB).
const PARTS = { multipartThreshold: 1 };

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
  const up = createUploader({ ...PARTS, baseUrl: BASE + '/', secretKey: 'msk_x', publicKey: 'mpk_y', externalUserId: 'eu-1', concurrency: 2, fetch: svc.fetch });
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
  await createUploader({ ...PARTS, baseUrl: BASE, sessionToken: 'sess', fetch: svc.fetch }).upload(file);
  assert.equal(svc.calls[0].url, BASE + '/api/embed/editor/uploads/splat-file');
  assert.deepEqual(svc.calls[0].headers, { Authorization: 'Bearer sess', 'Content-Type': 'application/json' });
  assert.equal(JSON.parse(svc.calls[0].body).contentType, 'application/splat');
  assert.throws(() => createUploader({ ...PARTS, baseUrl: BASE, secretKey: 'msk_x' }), /sessionToken/);
});

test('an aborted upload resumes after a reload from the uploadId alone, sending only the missing parts', async () => {
  const svc = fakeService();
  const { file, bytes } = sceneFile(23);
  const ac = new AbortController();
  const first = createUploader({ ...PARTS, baseUrl: BASE, sessionToken: 's', concurrency: 1, fetch: svc.fetch });
  let kept = null;
  first.on('uploadId', (e) => { kept = e.uploadId; });
  first.on('progress', (p) => { if (p.partsDone === 2) ac.abort(); });
  await assert.rejects(first.upload(file, { signal: ac.signal }), (err) => err.name === 'AbortError');
  assert.equal(kept, 'up1');
  assert.deepEqual([...svc.uploads.get('up1').parts.keys()].sort(), [1, 2]);

  svc.calls.length = 0;
  const second = createUploader({ ...PARTS, baseUrl: BASE, sessionToken: 's', concurrency: 3, fetch: svc.fetch });
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
  await createUploader({ ...PARTS, baseUrl: BASE, sessionToken: 's', fetch: svc.fetch, attempts: 4 }).upload(sceneFile(12).file);
  assert.equal(partPuts(svc.calls).filter((n) => n === 2).length, 3);

  svc = fakeService({ failPut: (n) => (n === 3 ? 403 : 0) });
  await assert.rejects(createUploader({ ...PARTS, baseUrl: BASE, sessionToken: 's', fetch: svc.fetch, concurrency: 1 }).upload(sceneFile(12).file),
    (err) => err instanceof UploadError && err.status === 403);
  assert.equal(partPuts(svc.calls).filter((n) => n === 3).length, 1);
  assert.equal(svc.uploads.get('up1').completed, false);
});

test('etags hidden by CORS come from the listing; service errors carry status and message; abort deletes', async () => {
  const svc = fakeService({ hideEtag: true });
  const up = createUploader({ ...PARTS, baseUrl: BASE, sessionToken: 's', fetch: svc.fetch });
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
  const first = createUploader({ ...PARTS, baseUrl: BASE, sessionToken: 's', concurrency: 1, fetch: svc.fetch });
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
  await createUploader({ ...PARTS, baseUrl: BASE, sessionToken: 's', fetch: svc.fetch, verifyPart }).upload(file, { uploadId: id });
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
  const keyed = { ...PARTS, baseUrl: BASE, secretKey: 'msk_x', publicKey: 'mpk_x', externalUserId: 'eu', fetch: flaky, attempts: 3 };
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
  await createUploader({ ...PARTS, baseUrl: BASE, sessionToken: 's', fetch: browser.fetch }).upload(sceneFile(12).file);
  assert.ok(browser.calls.every((c) => !('Idempotency-Key' in c.headers)), 'no key on the session routes (CORS)');
});

// localService stands for the service and the store on a loopback HTTP server, as the real ones
// behave for a single-file upload: POST …/splat-file signs one PUT of the declared size,
// Content-Type and Cache-Control (and refuses multipart below 5 MiB, as the service does);
// the PUT to the signed URL is checked against what was signed and stored.
async function localService() {
  const seen = [];
  const stored = new Map();
  const signed = new Map();
  let next = 1;
  const server = createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const url = new URL(req.url, 'http://127.0.0.1');
      seen.push({ method: req.method, path: url.pathname, headers: req.headers });
      const json = (status, v) => res.writeHead(status, { 'Content-Type': 'application/json' }).end(JSON.stringify(v));
      if (req.method === 'POST' && /^\/api\/(v1|embed\/editor)\/uploads\/splat-file$/.test(url.pathname)) {
        const r = JSON.parse(body.toString());
        if (r.multipart && r.fileSize < MULTIPART_MIN_BYTES) {
          return json(400, { status: 'error', code: 'VALIDATION', message: `a multipart upload must be at least ${MULTIPART_MIN_BYTES} bytes` });
        }
        if (r.multipart) return json(501, { status: 'error', code: 'INTERNAL', message: 'not in this fake' });
        const key = `k${next++}`;
        signed.set(key, r);
        return json(200, { status: 'success', uploadUrl: `${base}/store/${key}?X-Amz-Signature=x`, fileUrl: `${base}/files/${key}`,
          expiresAt: '2030-01-01T00:00:00.000Z' });
      }
      const put = url.pathname.match(/^\/store\/(k\d+)$/);
      if (req.method === 'PUT' && put && signed.has(put[1])) {
        const r = signed.get(put[1]);
        const ok = req.headers['content-type'] === r.contentType && req.headers['cache-control'] === 'public, max-age=31536000, immutable'
          && Number(req.headers['content-length']) === r.fileSize && body.length === r.fileSize;
        if (!ok) return res.writeHead(403).end('<Error><Code>SignatureDoesNotMatch</Code></Error>');
        stored.set(put[1], body);
        return res.writeHead(200, { ETag: '"whole"' }).end();
      }
      json(404, { status: 'error', code: 'NOT_FOUND', message: 'route not found' });
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${server.address().port}`;
  return { base, seen, stored, close: () => new Promise((resolve) => server.close(resolve)) };
}

// A file of `size` bytes as a File would be: a Blob with a name.
function blobFile(size, name) {
  const bytes = new Uint8Array(size);
  for (let i = 0; i < size; i++) bytes[i] = (i * 7) % 256;
  return { file: new File([bytes], name), bytes };
}

test('a file below the multipart minimum goes in one signed PUT, with keys or a session, over real HTTP', async (t) => {
  const svc = await localService();
  t.after(svc.close);
  const { file, bytes } = blobFile(640 * 1024, 'scene.splat');
  for (const auth of [{ secretKey: 'msk_x', publicKey: 'mpk_y', externalUserId: 'eu-1' }, { sessionToken: 'sess' }]) {
    svc.seen.length = 0;
    const up = createUploader({ baseUrl: svc.base, ...auth });
    const events = [];
    up.on('uploadId', (e) => events.push(['id', e.uploadId]));
    up.on('progress', (p) => events.push(['progress', p.bytesDone, p.bytesTotal, p.partsDone, p.partsTotal, 'uploadId' in p]));
    const res = await up.upload(file);
    const key = [...svc.stored.keys()].at(-1);
    assert.deepEqual(res, { fileUrl: `${svc.base}/files/${key}` }, 'a single PUT has no uploadId to resume');
    assert.deepEqual(new Uint8Array(svc.stored.get(key)), bytes);
    assert.deepEqual(svc.seen.map((c) => `${c.method} ${c.path}`),
      [`POST /api/${auth.sessionToken ? 'embed/editor' : 'v1'}/uploads/splat-file`, `PUT /store/${key}`]);
    assert.equal(svc.seen[1].headers.authorization, undefined, 'the store gets no credential');
    assert.deepEqual(events, [['progress', 0, 640 * 1024, 0, 1, false], ['progress', 640 * 1024, 640 * 1024, 1, 1, false]]);
  }
  // Raised, the threshold sends a larger file in one PUT too.
  const mid = blobFile(MULTIPART_MIN_BYTES + 10, 'mid.ply');
  const res = await createUploader({ baseUrl: svc.base, sessionToken: 's', multipartThreshold: 64 << 20 }).upload(mid.file);
  assert.deepEqual(new Uint8Array(svc.stored.get(res.fileUrl.split('/').at(-1))), mid.bytes);
});

test('a refused single PUT fails the upload with the store\'s status', async (t) => {
  const svc = await localService();
  t.after(svc.close);
  const { file } = blobFile(1000, 'scene.ply');
  // Declaring another content type than the one signed is what a store refuses (403).
  const up = createUploader({ baseUrl: svc.base, sessionToken: 's', fetch: (url, init) =>
    fetch(url, init?.method === 'PUT' ? { ...init, headers: { ...init.headers, 'Content-Type': 'text/plain' } } : init) });
  await assert.rejects(up.upload(file), (err) => err instanceof UploadError && err.status === 403);
  assert.equal(svc.stored.size, 0);
});

test('from the multipart minimum a file goes in parts by default', async () => {
  const svc = fakeService({ partSize: MULTIPART_MIN_BYTES });
  const { file, bytes } = blobFile(MULTIPART_MIN_BYTES + 3, 'big.splat');
  const ids = [];
  const up = createUploader({ baseUrl: BASE, sessionToken: 's', fetch: svc.fetch });
  up.on('uploadId', (e) => ids.push(e.uploadId));
  const res = await up.upload(file);
  assert.deepEqual(res, { uploadId: 'up1', fileUrl: `${STORE}/file/up1` });
  assert.deepEqual(ids, ['up1']);
  assert.equal(JSON.parse(svc.calls[0].body).multipart, true);
  assert.deepEqual(partPuts(svc.calls).sort(), [1, 2]);
  const stored = svc.uploads.get('up1').parts;
  assert.deepEqual(new Uint8Array(Buffer.concat([stored.get(1), stored.get(2)])), bytes);
});
