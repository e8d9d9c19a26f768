// Unit tests of the client over a fake fetch: the Go SDK's retry and Idempotency-Key rules,
// errors typed by code, the async iterators across pages, and uploads (single PUT below the
// multipart threshold, parts from it, resume). The real stack is driven by e2e/jssdk_test.go.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  Splathost, SplathostError, ErrorCodes, DEFAULT_RETRY_POLICY, MULTIPART_MIN_BYTES, isNotFound, isUnauthorized,
  isCustomerNotProvisioned, isCode, codeOf, isRateLimited,
} from '../dist/index.js';

const BASE = 'http://svc.test';
const FAST = { ...DEFAULT_RETRY_POLICY, initialBackoffMs: 1, maxBackoffMs: 5 };

/** A fake service: `route(req)` answers each request; every request is recorded. */
function fakeService(route) {
  const calls = [];
  const fetch = async (url, init = {}) => {
    const req = { url: String(url), method: init.method ?? 'GET', headers: new Headers(init.headers), body: init.body };
    calls.push(req);
    const a = await route(req, calls.filter((c) => c.method === req.method && c.url === req.url).length);
    if (a instanceof Error) throw a;
    const { status = 200, body, headers = {} } = a;
    return new Response(body === undefined ? null : typeof body === 'string' ? body : JSON.stringify(body), { status, headers });
  };
  return { fetch, calls };
}

function client(svc, extra = {}) {
  return new Splathost({ baseUrl: BASE + '/', publicKey: 'mpk_p', secretKey: 'msk_s', retry: FAST, fetch: svc.fetch, ...extra });
}

const envelope = (code, message = code, extra = {}) => ({ status: 'error', code, message, ...extra });

test('a keyed call sends one Idempotency-Key on every attempt and retries 5xx, network errors and IDEMPOTENCY_KEY_IN_USE', async () => {
  const answers = [new TypeError('fetch failed'), { status: 503, body: envelope('UNAVAILABLE') },
    { status: 409, body: envelope(ErrorCodes.IdempotencyKeyInUse) }, { status: 201, body: { splatId: 's1', splat: {}, usage: {} } }];
  const svc = fakeService((_, n) => answers[n - 1]);
  const res = await client(svc).commitSplat('eu-1', { title: 't', splatUrl: 'u' });
  assert.equal(res.splatId, 's1');
  assert.equal(svc.calls.length, 4);
  const keys = new Set(svc.calls.map((c) => c.headers.get('Idempotency-Key')));
  assert.equal(keys.size, 1);
  assert.match([...keys][0], /^[0-9a-f]{32}$/);
  const h = svc.calls[0].headers;
  assert.equal(h.get('Authorization'), 'Bearer msk_s');
  assert.equal(h.get('X-Service-Public-Key'), 'mpk_p');
  assert.equal(h.get('X-Service-External-User-Id'), 'eu-1');
  assert.equal(svc.calls[0].url, BASE + '/api/v1/splats');
});

test('a chosen key is sent as given; each call without one gets its own', async () => {
  const svc = fakeService(() => ({ status: 200, body: { externalUser: { id: 'x' } } }));
  const c = client(svc);
  await c.putCustomer('eu', {}, { idempotencyKey: 'order-1138' });
  await c.putCustomer('eu');
  await c.putCustomer('eu');
  const keys = svc.calls.map((r) => r.headers.get('Idempotency-Key'));
  assert.equal(keys[0], 'order-1138');
  assert.notEqual(keys[1], keys[2]);
});

test('a POST without a key is not retried after a 5xx; a 409 of another cause is not waited out', async () => {
  const svc = fakeService(() => ({ status: 500, body: envelope('INTERNAL', 'boom') }));
  await assert.rejects(client(svc).createWebhook({ url: 'https://h.test/hook' }), (e) => e instanceof SplathostError && e.code === 'INTERNAL');
  assert.equal(svc.calls.length, 1);
  const conflict = fakeService(() => ({ status: 409, body: envelope('CONFLICT') }));
  await assert.rejects(client(conflict).commitSplat('eu', { title: 't', splatUrl: 'u' }), (e) => e.code === 'CONFLICT');
  assert.equal(conflict.calls.length, 1);
});

test('safe POSTs and idempotent methods are retried up to maxAttempts, then the last error is thrown', async () => {
  const svc = fakeService(() => ({ status: 502, body: envelope('UNAVAILABLE') }));
  await assert.rejects(client(svc).mintSession({ type: 'viewer', splatId: 's' }), (e) => e.status === 502);
  assert.equal(svc.calls.length, DEFAULT_RETRY_POLICY.maxAttempts);
  assert.equal(svc.calls[0].headers.get('X-Service-Public-Key'), null, 'a mint carries the secret alone');
  assert.deepEqual(JSON.parse(svc.calls[0].body), { type: 'viewer', splatId: 's', publicKey: 'mpk_p' });
  const get = fakeService(() => new TypeError('fetch failed'));
  await assert.rejects(client(get, { retry: { ...FAST, maxAttempts: 2 } }).getSplat('eu', 's'), TypeError);
  assert.equal(get.calls.length, 2);
});

test('a 429 RATE_LIMITED is retried for every call, after its Retry-After (capped); TOO_MANY_OPEN_UPLOADS is not', async () => {
  const svc = fakeService((_, n) => n === 1 ? { status: 429, body: envelope('RATE_LIMITED'), headers: { 'Retry-After': '1' } }
    : { status: 201, body: { webhook: { id: 'w' } } });
  const t0 = Date.now();
  const w = await client(svc, { retry: { ...FAST, maxBackoffMs: 50 } }).createWebhook({ url: 'https://h.test' });
  assert.equal(w.id, 'w');
  assert.ok(Date.now() - t0 >= 40, 'waited the Retry-After, capped at maxBackoffMs');
  const limited = fakeService(() => ({ status: 429, body: envelope('RATE_LIMITED') }));
  await assert.rejects(client(limited).listWebhooks(), (e) => isRateLimited(e));
  assert.equal(limited.calls.length, DEFAULT_RETRY_POLICY.maxAttempts);
  const open = fakeService(() => ({ status: 429, body: envelope('TOO_MANY_OPEN_UPLOADS') }));
  await assert.rejects(client(open).requestFileUpload('eu', { fileName: 'a.ply', contentType: 'application/ply', fileSize: 1 }),
    (e) => isCode(e, ErrorCodes.TooManyOpenUploads));
  assert.equal(open.calls.length, 1);
});

test('an abort stops the waits between attempts', async () => {
  const svc = fakeService(() => ({ status: 503, body: envelope('UNAVAILABLE'), headers: { 'Retry-After': '30' } }));
  const ac = new AbortController();
  const p = client(svc, { retry: { ...DEFAULT_RETRY_POLICY, maxBackoffMs: 60000 } }).getCustomer('eu', { signal: ac.signal });
  setTimeout(() => ac.abort(new Error('stop')), 20);
  await assert.rejects(p, /stop/);
  assert.equal(svc.calls.length, 1);
});

test('errors are typed by code, with the envelope details', async () => {
  const answers = {
    '/api/v1/splats/nope': { status: 404, body: envelope('NOT_FOUND', 'splat not found') },
    '/api/v1/external-user': { status: 404, body: envelope('CUSTOMER_NOT_PROVISIONED') },
    '/api/v1/external-user/usage': { status: 401, body: envelope('UNAUTHORIZED'), headers: { 'X-Request-Id': 'rq-1' } },
    '/api/v1/uploads/splat-file': { status: 413, body: envelope('STORAGE_QUOTA_EXCEEDED', 'full', { scope: 'customer', usedBytes: 9, limitBytes: 10, remainingBytes: 1, requestedBytes: 5 }) },
    '/api/v1/splats': { status: 400, body: envelope('VALIDATION', 'invalid', { issues: ['title: required'] }) },
    '/api/v1/webhooks': { status: 502, body: '<html>bad gateway</html>' },
  };
  const svc = fakeService((req) => answers[new URL(req.url).pathname]);
  const c = client(svc, { retry: { ...FAST, maxAttempts: 1 } });
  const caught = async (p) => { try { await p; } catch (e) { return e; } assert.fail('no error'); };
  const nf = await caught(c.getSplat('eu', 'nope'));
  assert.ok(isNotFound(nf) && nf.code === 'NOT_FOUND' && nf.message === 'splat not found' && !isCustomerNotProvisioned(nf));
  const np = await caught(c.getCustomer('eu'));
  assert.ok(isNotFound(np) && isCustomerNotProvisioned(np) && !isUnauthorized(np));
  const ua = await caught(c.customerUsage('eu'));
  assert.ok(isUnauthorized(ua) && ua.requestId === 'rq-1' && codeOf(ua) === 'UNAUTHORIZED');
  const q = await caught(c.requestFileUpload('eu', { fileName: 'a.ply', contentType: 'application/ply', fileSize: 5 }));
  assert.deepEqual([q.status, q.storage.scope, q.storage.remainingBytes], [413, 'customer', 1]);
  const v = await caught(c.commitSplat('eu', { title: '', splatUrl: '' }));
  assert.deepEqual([v.code, v.issues], ['VALIDATION', ['title: required']]);
  assert.equal(String(v), 'splathost: 400 VALIDATION: invalid (title: required)');
  const proxy = await caught(c.listWebhooks());
  assert.deepEqual([proxy.status, proxy.code, proxy.message], [502, '', 'HTTP 502']);
  assert.equal(codeOf(new Error('network')), '');
});

test('allSplats follows nextCursor lazily across pages and stops fetching when the loop breaks', async () => {
  const ids = Array.from({ length: 7 }, (_, i) => `s${i}`);
  const svc = fakeService((req) => {
    const u = new URL(req.url);
    const from = Number(u.searchParams.get('cursor') ?? 0);
    const limit = Number(u.searchParams.get('limit'));
    const next = from + limit < ids.length ? String(from + limit) : '';
    return { body: { splats: ids.slice(from, from + limit).map((id) => ({ id })), nextCursor: next } };
  });
  const c = client(svc);
  const seen = [];
  for await (const s of c.allSplats({ externalUserId: 'eu', limit: 2, sort: 'createdAt' })) seen.push(s.id);
  assert.deepEqual(seen, ids);
  assert.equal(svc.calls.length, 4, 'four pages of 2');
  assert.equal(svc.calls[0].headers.get('X-Service-External-User-Id'), 'eu');
  assert.match(svc.calls[1].url, /limit=2&cursor=2&sort=createdAt/);
  svc.calls.length = 0;
  for await (const s of c.allSplats({ limit: 2 })) if (s.id === 's2') break;
  assert.equal(svc.calls.length, 2, 'no page after the break');
});

test('a failing page throws from the loop; a repeated cursor is refused', async () => {
  const failing = fakeService((req) => new URL(req.url).searchParams.get('cursor')
    ? { status: 404, body: envelope('NOT_FOUND') } : { body: { deliveries: [{ id: 'd1' }], nextCursor: 'c2' } });
  const got = [];
  await assert.rejects(async () => { for await (const d of client(failing).allWebhookDeliveries('w1', 1)) got.push(d.id); }, (e) => isNotFound(e));
  assert.deepEqual(got, ['d1']);
  const stuck = fakeService(() => ({ body: { splats: [{ id: 'a' }], nextCursor: 'same' } }));
  await assert.rejects(async () => { for await (const _ of client(stuck).allSplats({ cursor: 'same' })) { /* drain */ } }, /cursor/);
});

/** A fake service that takes uploads: single PUTs and multipart parts on signed URLs. */
function uploadService({ partSize = MULTIPART_MIN_BYTES, failPart = 0 } = {}) {
  const stored = new Map();
  let single = 0;
  let failures = failPart ? 1 : 0;
  const svc = fakeService(async (req) => {
    const u = new URL(req.url);
    if (u.host === 'store.test') {
      if (u.pathname === '/single') {
        single++;
        assert.equal(req.headers.get('Content-Type'), 'application/splat');
        assert.equal(req.headers.get('Cache-Control'), 'public, max-age=31536000, immutable');
        return { status: 200 };
      }
      const n = Number(u.pathname.slice('/part/'.length));
      if (n === failPart && failures-- > 0) return { status: 403, body: '<Error/>' };
      const bytes = new Uint8Array(await req.body.arrayBuffer());
      stored.set(n, bytes.length);
      return { status: 200, headers: { ETag: `"etag-${n}"` } };
    }
    const body = req.body ? JSON.parse(req.body) : null;
    if (u.pathname === '/api/v1/uploads/splat-file' && !body.multipart) {
      return { body: { uploadUrl: 'http://store.test/single', fileUrl: 'http://files.test/one.splat', expiresAt: '' } };
    }
    if (u.pathname === '/api/v1/uploads/splat-file') {
      const parts = Array.from({ length: Math.ceil(body.fileSize / partSize) }, (_, i) => ({ partNumber: i + 1, uploadUrl: `http://store.test/part/${i + 1}` }));
      return { body: { uploadId: 'up1', fileUrl: 'http://files.test/big.splat', partSize, parts, expiresAt: '' } };
    }
    if (u.pathname === '/api/v1/uploads/splat-file/up1') {
      const total = Math.ceil(svc.size / partSize);
      const all = Array.from({ length: total }, (_, i) => i + 1);
      return { body: { uploadId: 'up1', state: 'uploading', fileUrl: 'http://files.test/big.splat', fileSize: svc.size, partSize,
        parts: all.filter((n) => stored.has(n)).map((n) => ({ partNumber: n, etag: `etag-${n}`, size: stored.get(n), uploadUrl: `http://store.test/part/${n}` })),
        missingParts: all.filter((n) => !stored.has(n)).map((n) => ({ partNumber: n, uploadUrl: `http://store.test/part/${n}` })), expiresAt: '' } };
    }
    if (u.pathname === '/api/v1/uploads/splat-file/up1/complete') {
      svc.completed = body.parts;
      return { body: { fileUrl: 'http://files.test/big.splat' } };
    }
    if (u.pathname === '/api/v1/splats') return { status: 201, body: { splatId: 's-' + body.splatUrl, splat: {}, usage: {}, sent: body } };
    return { status: 404, body: envelope('NOT_FOUND') };
  });
  svc.stored = stored;
  svc.singles = () => single;
  return svc;
}

test('uploadFile sends a file below the multipart minimum in one PUT, then commits it', async () => {
  const svc = uploadService();
  const file = new Blob([new Uint8Array(640 * 1024)]);
  const progress = [];
  let started = null;
  const res = await client(svc).uploadFile('eu', file, { fileName: 'small.splat', title: 'Small', onProgress: (p) => progress.push(p.bytesDone),
    onUploadStarted: (id) => { started = id; } });
  assert.equal(res.splatId, 's-http://files.test/one.splat');
  assert.equal(svc.singles(), 1);
  assert.equal(started, null, 'a single PUT has no upload to resume');
  assert.equal(JSON.parse(svc.calls[0].body).multipart, undefined, 'the single-file request, not a multipart start');
  assert.equal(svc.stored.size, 0);
  assert.deepEqual(progress, [0, 640 * 1024]);
  const commit = svc.calls.find((c) => c.url === BASE + '/api/v1/splats');
  assert.deepEqual(JSON.parse(commit.body), { title: 'Small', splatType: 'file', splatUrl: 'http://files.test/one.splat' });
});

test('uploadFile sends a file from the multipart minimum in parts, and resumes an interrupted one', async () => {
  const size = 2 * MULTIPART_MIN_BYTES + 1234;
  const svc = uploadService({ failPart: 2 });
  svc.size = size;
  const file = new File([new Uint8Array(size)], 'big.splat');
  const c = client(svc);
  let started = '';
  await assert.rejects(c.uploadFile('eu', file, { concurrency: 1, onUploadStarted: (id) => { started = id; } }),
    (e) => e.uploadId === 'up1' && /resume with options.uploadId/.test(e.message) && e.cause.status === 403);
  assert.equal(started, 'up1');
  assert.deepEqual([...svc.stored.keys()], [1], 'part 1 stored, part 2 refused, part 3 never started');
  const before = new Set(svc.stored.keys());
  const sent = [];
  const res = await c.uploadFile('eu', file, { uploadId: started, onProgress: (p) => sent.push(p.partsDone) });
  assert.equal(res.splatId, 's-http://files.test/big.splat');
  assert.deepEqual(svc.completed.map((p) => p.partNumber), [1, 2, 3]);
  assert.deepEqual(svc.completed.map((p) => p.etag), ['etag-1', 'etag-2', 'etag-3']);
  assert.equal(sent[0], before.size, 'the resumed upload starts from the parts stored');
  assert.equal(svc.stored.get(3), 1234, 'the last part holds the rest');
  assert.equal(svc.singles(), 0);
});

test('multipartThreshold raises the size sent in one PUT; a file needs a scene extension or a content type', async () => {
  const svc = uploadService();
  await client(svc).uploadFile('eu', new Blob([new Uint8Array(MULTIPART_MIN_BYTES + 1)]), { fileName: 'mid.splat', multipartThreshold: 100 << 20 });
  assert.equal(svc.singles(), 1);
  await assert.rejects(client(svc).uploadFile('eu', new Blob(['x']), { fileName: 'notes.txt' }), /\.sog, \.ksplat, \.ply or \.splat/);
});

test('the constructor refuses a base URL that is not absolute http(s)', () => {
  assert.throws(() => new Splathost({ baseUrl: 'localhost:8080' }), /absolute http/);
  assert.throws(() => new Splathost({ baseUrl: 'ftp://x' }), /absolute http/);
});

test('cloneAndWait polls a 202 job to its result; with resumeRunning it polls the running job of a 429 for the same scene', async () => {
  const job = { status: 'pending', jobId: 'j1', copiedObjects: 1, totalObjects: 3 };
  const done = { status: 'success', splatId: 'copy', sourceSplatId: 'src', splat: { id: 'copy' }, usage: {} };
  let polls = 0;
  const svc = fakeService((req) => {
    const u = new URL(req.url);
    if (req.method === 'POST') return { status: 202, body: job };
    assert.equal(u.pathname, '/api/v1/splats/src/clone/j1');
    return ++polls < 3 ? { status: 202, body: job } : { body: done };
  });
  const seen = [];
  const res = await client(svc).cloneAndWait('eu', 'src', { respondAsync: true, pollIntervalMs: 1, onProgress: (j) => seen.push(j.jobId) });
  assert.equal(res.splatId, 'copy');
  assert.deepEqual(seen, ['j1', 'j1']);
  assert.equal(svc.calls[0].headers.get('Prefer'), 'respond-async');
  assert.ok(svc.calls[0].headers.get('Idempotency-Key'));

  const busy = (source) => fakeService((req) => req.method === 'POST'
    ? { status: 429, body: envelope('CLONE_IN_PROGRESS', 'busy', { jobId: 'j1', sourceSplatId: source }) } : { body: done });
  const same = busy('src');
  assert.equal((await client(same).cloneAndWait('eu', 'src', { resumeRunning: true, pollIntervalMs: 1 })).splatId, 'copy');
  await assert.rejects(client(busy('other')).cloneAndWait('eu', 'src', { resumeRunning: true }),
    (e) => isCode(e, ErrorCodes.CloneInProgress) && e.cloneInProgress.sourceSplatId === 'other');
});
