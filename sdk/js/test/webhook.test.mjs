// Unit tests of the webhook verifier (WebCrypto): valid, rotated (two signatures), forged,
// replayed and malformed deliveries; the signature vector is the Go tests' (computed apart with
// Python). The package's module and the gateway's /sdk/splathost-webhook.js bundle of it are both
// checked, since both are built from src/webhook.ts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { existsSync } from 'node:fs';
import * as pkg from '../dist/webhook.js';
import * as index from '../dist/index.js';

const gatewayBundle = new URL('../../../web/dist/sdk/splathost-webhook.js', import.meta.url);
const modules = { package: pkg, gateway: existsSync(gatewayBundle) ? await import(gatewayBundle.href) : null };
const { WebhookVerificationError, WebhookOrder, webhookResource } = pkg;

const SECRET = 'whsec_' + Buffer.from('secret-key-of-32-bytes-long!!!!!').toString('base64');
const OTHER = 'whsec_' + Buffer.from('another key of thirty-two bytes!').toString('base64');
const NOW = 1700000000;
const BODY = '{"type":"splat.deleted","timestamp":"2023-11-14T22:13:20.000Z","data":{"splatId":"s","externalUserId":"c"}}';

function sign(secret, id, ts, body) {
  const key = Buffer.from(secret.slice(6), 'base64');
  return 'v1,' + createHmac('sha256', key).update(`${id}.${ts}.${body}`).digest('base64');
}

function headers(id, ts, sig) {
  return { 'webhook-id': id, 'webhook-timestamp': String(ts), 'webhook-signature': sig };
}

test('the known vector', () => {
  assert.equal(sign(SECRET, 'msg_1', 1700000000, '{"a":1}'), 'v1,8v9mmXBQhynRKrRS3mZssQRhno8HHeEGB1lMTBaUJUQ=');
});

test('the package index exports the one verifier', () => {
  assert.equal(index.verifyWebhook, pkg.verifyWebhook);
});

for (const [name, mod] of Object.entries(modules)) {
const { verifyWebhook } = mod ?? {};
const opts = { skip: mod === null ? 'web/dist is not built' : false };

test(`${name}: a valid delivery verifies and parses`, opts, async () => {
  const e = await verifyWebhook(SECRET, headers('m1', NOW, sign(SECRET, 'm1', NOW, BODY)), BODY, NOW);
  assert.equal(e.type, 'splat.deleted');
  assert.deepEqual(e.data, { splatId: 's', externalUserId: 'c' });
});

test(`${name}: any of the rotation signatures verifies, with fetch Headers and bytes too`, opts, async () => {
  const sig = sign(OTHER, 'm1', NOW, BODY) + ' ' + sign(SECRET, 'm1', NOW, BODY);
  await verifyWebhook(SECRET, headers('m1', NOW, sig), BODY, NOW);
  await verifyWebhook(OTHER, new Headers(headers('m1', NOW, sig)), new TextEncoder().encode(BODY), NOW);
});

test(`${name}: forged, replayed and malformed deliveries are refused`, opts, async () => {
  const good = sign(SECRET, 'm1', NOW, BODY);
  const cases = [
    [SECRET, headers('m1', NOW, good), BODY + ' ', 'signature'],
    [SECRET, headers('m2', NOW, good), BODY, 'signature'],
    [OTHER, headers('m1', NOW, good), BODY, 'signature'],
    [SECRET, headers('m1', NOW, 'v2,' + good.slice(3)), BODY, 'signature'],
    [SECRET, headers('m1', NOW - 301, sign(SECRET, 'm1', NOW - 301, BODY)), BODY, 'timestamp'],
    [SECRET, headers('m1', NOW + 301, sign(SECRET, 'm1', NOW + 301, BODY)), BODY, 'timestamp'],
    [SECRET, headers('m1', NOW, 'v1,not base64!'), BODY, 'signature'],
    [SECRET, {}, BODY, 'headers'],
    ['nope', headers('m1', NOW, good), BODY, 'secret'],
    ['whsec_', headers('m1', NOW, good), BODY, 'secret'],
  ];
  for (const [secret, h, body, reason] of cases) {
    await assert.rejects(verifyWebhook(secret, h, body, NOW),
      (err) => err instanceof mod.WebhookVerificationError && err.reason === reason, reason);
  }
});
}

test('WebhookOrder keeps the newest event of each resource, whatever the arrival order', () => {
  const upd = (id, title, sequence) => ({ type: 'splat.updated', timestamp: '', sequence, data: { splat: { id, title } } });
  const order = new WebhookOrder();
  // The arrival order measured after a receiver outage: updates t1, t3, t2, then created after deleted.
  const steps = [
    [upd('a', 't1', 12), true],
    [upd('a', 't3', 19), true],
    [upd('b', 'b1', 11), true],
    [upd('a', 't2', 15), false],
    [upd('a', 't3', 19), false],
    [{ type: 'splat.deleted', timestamp: '', sequence: 23, data: { splatId: 'a', externalUserId: 'c' } }, true],
    [{ type: 'splat.created', timestamp: '', sequence: 10, data: { splat: { id: 'a' } } }, false],
  ];
  for (const [event, newer] of steps) assert.equal(order.apply(event), newer, JSON.stringify(event));
  assert.equal(webhookResource({ type: 'clone.failed', timestamp: '', sequence: 1, data: { jobId: 'j', sourceSplatId: 's', message: 'm' } }), 'cloneJob/j');
  assert.equal(webhookResource({ type: 'externalUser.deleted', timestamp: '', sequence: 1, data: { externalUserId: 'c' } }), 'externalUser/c');
  assert.throws(() => webhookResource({ type: 'splat.deleted', timestamp: '', sequence: 1, data: {} }));
});
