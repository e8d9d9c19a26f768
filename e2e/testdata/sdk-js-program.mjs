// An integrator's Node program using only @splathost/sdk (installed from its tarball), run by
// e2e/jssdk_test.go against the test stack: provision a customer, upload a 600 KB scene (one
// PUT) and a 120 MB one (parts, interrupted and resumed), commit both, mint a session, list the
// scenes across pages with the async iterator, and verify the webhook deliveries the stack sends.
// It prints one JSON line of what it saw; any failure exits non-zero.
import { createServer } from 'node:http';
import { openAsBlob } from 'node:fs';
import { basename } from 'node:path';
import { Splathost, MULTIPART_MIN_BYTES, isNotFound, isCustomerNotProvisioned, isUnauthorized } from '@splathost/sdk';
import { verifyWebhook } from '@splathost/sdk/webhook';

const { SPLATHOST_URL, SPLATHOST_PK, SPLATHOST_SK, SMALL_FILE, BIG_FILE } = process.env;
const eu = `node-${Date.now()}`;
const out = { externalUserId: eu };
const assert = (cond, what) => { if (!cond) throw new Error(`check failed: ${what}`); };

// Count the list pages the iterator fetches and the parts PUT to the store: the client takes a
// fetch, as an integrator's instrumentation would.
let listPages = 0;
let partPuts = 0;
const client = new Splathost({
  baseUrl: SPLATHOST_URL, publicKey: SPLATHOST_PK, secretKey: SPLATHOST_SK,
  fetch: (url, init) => {
    const u = new URL(String(url));
    if ((init?.method ?? 'GET') === 'GET' && u.pathname === '/api/v1/splats') listPages++;
    if (init?.method === 'PUT' && u.searchParams.has('partNumber')) partPuts++;
    return fetch(url, init);
  },
});

// The integrator's webhook endpoint: every delivery is verified with the endpoint's secret.
let secret = '';
const verified = [];
const refused = [];
const receiver = createServer((req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', async () => {
    try {
      verified.push(await verifyWebhook(secret, req.headers, new Uint8Array(Buffer.concat(chunks))));
      res.writeHead(204).end();
    } catch (err) {
      refused.push(String(err));
      res.writeHead(400).end();
    }
  });
});
await new Promise((resolve) => receiver.listen(0, '127.0.0.1', resolve));
const hook = await client.createWebhook({ url: `http://127.0.0.1:${receiver.address().port}/hook`, events: ['splat.created'] });
secret = hook.secret;
assert(secret.startsWith('whsec_'), 'the webhook secret is returned once');

// A customer never provisioned is told apart from a wrong key.
try {
  await client.getCustomer(eu);
  assert(false, 'getCustomer before putCustomer fails');
} catch (err) {
  assert(isCustomerNotProvisioned(err) && !isUnauthorized(err), `not provisioned: ${err}`);
}
const customer = await client.putCustomer(eu, { limitBytes: 200 * 1024 * 1024, maxSplats: null });
assert(customer.externalUserId === eu, 'the customer is provisioned');

// openAsBlob reads the files lazily: each PUT streams its slice from disk.
const small = await openAsBlob(SMALL_FILE);
const big = await openAsBlob(BIG_FILE);
const bigName = basename(BIG_FILE);
assert(small.size < MULTIPART_MIN_BYTES && big.size > MULTIPART_MIN_BYTES, 'one file each side of the multipart minimum');
const a = await client.uploadFile(eu, small, { fileName: basename(SMALL_FILE), title: 'Small' });
out.smallPartPuts = partPuts;

// The big file in parts, interrupted after its first part, then resumed by its uploadId: only
// the parts not stored are sent again.
let uploadId = '';
const stop = new AbortController();
try {
  await client.uploadFile(eu, big, { fileName: bigName, title: 'Big', concurrency: 1, signal: stop.signal,
    onUploadStarted: (id) => { uploadId = id; },
    onProgress: (p) => { if (p.partsDone === 1) stop.abort(new Error('interrupted')); } });
  assert(false, 'the interrupted upload fails');
} catch (err) {
  assert(uploadId !== '' && err.uploadId === uploadId, `the interruption names the upload: ${err}`);
}
const sentBefore = partPuts;
const parts = [];
const b = await client.uploadFile(eu, big, { fileName: bigName, title: 'Big', uploadId, onProgress: (p) => parts.push(p.partsDone) });
out.resumedFrom = parts[0];
out.multipartParts = parts.at(-1);
out.resumedPuts = partPuts - sentBefore;
out.uploadId = uploadId;
const c = await client.uploadFile(eu, small, { fileName: 'third.splat' });
out.splatIds = [a.splatId, b.splatId, c.splatId];
const got = await client.getSplat(eu, b.splatId);
assert(got.fileSizeBytes === big.size, `the big scene holds every byte (${got.fileSizeBytes})`);
const patched = await client.patchSplat(eu, a.splatId, { title: 'Small, renamed', visibility: 'public' });
assert(patched.title === 'Small, renamed' && patched.visibility === 'public', 'patch');

const session = await client.mintSession({ type: 'viewer', splatId: a.splatId });
assert(session.sessionToken.length > 0, 'a viewer session is minted');
out.session = true;

const usage = await client.customerUsage(eu);
assert(usage.splats.used === 3, `usage counts the scenes (${usage.splats.used})`);

// Three scenes, one a page: the iterator fetches each page as the loop reaches it.
const listed = [];
for await (const s of client.allSplats({ externalUserId: eu, limit: 1 })) listed.push(s.id);
assert(listed.length === 3 && out.splatIds.every((id) => listed.includes(id)), `iterated ${listed}`);
out.listed = listed.length;
out.listPages = listPages;

// The deliveries of the three splat.created events, each verified. The wait follows the
// deliveries' progress (what arrived, and each logged delivery's state and attempts): it gives
// up only when that stays the same for three minutes.
let mark = '';
let since = Date.now();
while (verified.length < 3) {
  const log = [];
  for await (const d of client.allWebhookDeliveries(hook.id)) log.push(`${d.id}:${d.state}:${d.attempts}`);
  const now = `${verified.length}|${refused.length}|${log.sort().join(',')}`;
  if (now !== mark) { mark = now; since = Date.now(); }
  assert(Date.now() - since < 180_000, `webhook deliveries stopped progressing: ${mark}`);
  await new Promise((r) => setTimeout(r, 250));
}
assert(refused.length === 0, `no delivery refused: ${refused}`);
const created = verified.filter((e) => e.type === 'splat.created').map((e) => e.data.splat.id);
assert(out.splatIds.every((id) => created.includes(id)), `a verified splat.created per scene (${created})`);
out.verifiedDeliveries = verified.length;
let logged = 0;
for await (const d of client.allWebhookDeliveries(hook.id, 1)) if (d.type === 'splat.created') logged++;
out.loggedDeliveries = logged;

await client.deleteSplat(eu, c.splatId);
try {
  await client.getSplat(eu, c.splatId);
  assert(false, 'a deleted scene is gone');
} catch (err) {
  assert(isNotFound(err) && err.code === 'NOT_FOUND', `deleted: ${err}`);
}
await client.deleteWebhook(hook.id);
receiver.close();
console.log(JSON.stringify(out));
