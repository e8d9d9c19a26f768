// Unit tests of the Node webhook verifier: valid, rotated (two signatures), forged, replayed
// and malformed deliveries; the signature vector is the Go tests' (computed apart with Python).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { verifyWebhook, WebhookVerificationError, WebhookOrder, webhookResource } from '../../dist/sdk/splathost-webhook.js';

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

test('a valid delivery verifies and parses', () => {
  const e = verifyWebhook(SECRET, headers('m1', NOW, sign(SECRET, 'm1', NOW, BODY)), BODY, NOW);
  assert.equal(e.type, 'splat.deleted');
  assert.deepEqual(e.data, { splatId: 's', externalUserId: 'c' });
});

test('any of the rotation signatures verifies, with fetch Headers too', () => {
  const sig = sign(OTHER, 'm1', NOW, BODY) + ' ' + sign(SECRET, 'm1', NOW, BODY);
  verifyWebhook(SECRET, headers('m1', NOW, sig), BODY, NOW);
  verifyWebhook(OTHER, new Headers(headers('m1', NOW, sig)), Buffer.from(BODY), NOW);
});

test('forged, replayed and malformed deliveries are refused', () => {
  const good = sign(SECRET, 'm1', NOW, BODY);
  const cases = [
    [SECRET, headers('m1', NOW, good), BODY + ' ', 'signature'],
    [SECRET, headers('m2', NOW, good), BODY, 'signature'],
    [OTHER, headers('m1', NOW, good), BODY, 'signature'],
    [SECRET, headers('m1', NOW, 'v2,' + good.slice(3)), BODY, 'signature'],
    [SECRET, headers('m1', NOW - 301, sign(SECRET, 'm1', NOW - 301, BODY)), BODY, 'timestamp'],
    [SECRET, headers('m1', NOW + 301, sign(SECRET, 'm1', NOW + 301, BODY)), BODY, 'timestamp'],
    [SECRET, {}, BODY, 'headers'],
    ['nope', headers('m1', NOW, good), BODY, 'secret'],
  ];
  for (const [secret, h, body, reason] of cases) {
    assert.throws(() => verifyWebhook(secret, h, body, NOW),
      (err) => err instanceof WebhookVerificationError && err.reason === reason, reason);
  }
});

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
