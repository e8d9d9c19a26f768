// Unit tests of the room client (src/room.ts) against a fake WebSocket and node's mocked timers:
// reconnect backoff, resync from welcome, coalescing of edits and camera presence, the frame
// bound, and the closes after which it must not retry. The module is bundled by esbuild (as
// the page gets it) into a temporary file and imported from there.
import { after, before, beforeEach, afterEach, test, mock } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { build } from 'esbuild';

const src = join(dirname(fileURLToPath(import.meta.url)), '..', 'src', 'room.ts');
let dir;
let room;
before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'splathost-room-test-'));
  const out = join(dir, 'room.mjs');
  await build({ entryPoints: [src], outfile: out, bundle: true, format: 'esm', platform: 'neutral', logLevel: 'warning' });
  room = await import(pathToFileURL(out).href);
});
after(async () => { await rm(dir, { recursive: true, force: true }); });

/** A WebSocket stand-in: records what the client sends; the test opens, speaks and closes. */
class FakeSocket {
  static CONNECTING = 0;
  static OPEN = 1;
  static CLOSING = 2;
  static CLOSED = 3;
  static all = [];
  constructor(url) {
    this.url = url;
    this.readyState = FakeSocket.CONNECTING;
    this.sent = [];
    this.times = [];
    this.closedWith = null;
    FakeSocket.all.push(this);
  }
  send(data) {
    assert.equal(this.readyState, FakeSocket.OPEN, 'sent on a socket that is not open');
    this.sent.push(JSON.parse(data));
    this.times.push(Date.now());
  }
  close(code) {
    this.closedWith = code;
    this.readyState = FakeSocket.CLOSED;
  }
  // Test side.
  open() {
    this.readyState = FakeSocket.OPEN;
    this.onopen?.({});
  }
  say(msg) {
    this.onmessage?.({ data: JSON.stringify(msg) });
  }
  serverClose(code, reason = '') {
    this.readyState = FakeSocket.CLOSED;
    this.onclose?.({ code, reason });
  }
}

const peer = (id, name) => ({ id, name, avatarUrl: null, colour: '#336699', guest: false });
const welcome = (draft = {}, seq = 0) => ({ type: 'welcome', self: peer('me', 'Me'), peers: [peer('me', 'Me')], draft, seq });
const last = () => FakeSocket.all[FakeSocket.all.length - 1];

// Advances the mocked clock in 10 ms steps: node's mocked Date reads the end of a tick inside
// every timer it fires, so one long tick would blur the times the client sees.
function advance(ms) {
  for (let t = 0; t < ms; t += 10) mock.timers.tick(Math.min(10, ms - t));
}

beforeEach(() => {
  FakeSocket.all = [];
  globalThis.WebSocket = FakeSocket;
  mock.timers.enable({ apis: ['setTimeout', 'setInterval', 'Date'] });
});
afterEach(() => {
  mock.timers.reset();
  delete globalThis.WebSocket;
});

/** A room whose handlers record every call. */
function newRoom(extra = {}) {
  const calls = [];
  const rec = (name) => (...args) => calls.push([name, ...args]);
  const r = new room.Room({
    splatId: 'a'.repeat(24), token: () => 'tok.en', origin: 'ws://gw.test',
    handlers: { welcome: rec('welcome'), join: rec('join'), leave: rec('leave'), edit: rec('edit'),
      camera: rec('camera'), saved: rec('saved'), error: rec('error'), state: rec('state') },
    ...extra,
  });
  return { r, calls };
}

test('backoff doubles from 0.5 s to 10 s with jitter inside the bounds', () => {
  const lo = () => 0;
  const hi = () => 0.999999;
  assert.equal(room.backoffDelay(0, lo), 500, 'the floor is 0.5 s');
  assert.equal(room.backoffDelay(0, hi), 625);
  assert.equal(room.backoffDelay(3, lo), 3000);
  assert.equal(room.backoffDelay(3, hi), 5000);
  assert.equal(room.backoffDelay(20, hi), 10_000, 'the ceiling is 10 s');
  assert.equal(room.backoffDelay(20, lo), 7500);
  const seen = new Set(Array.from({ length: 50 }, () => room.backoffDelay(2)));
  assert.ok(seen.size > 5, 'jitter spreads the delays');
});

test('connects to the room URL with the scene and the token', () => {
  newRoom();
  assert.equal(last().url, `ws://gw.test/api/embed/room?splatId=${'a'.repeat(24)}&session=tok.en`);
});

test('edits made before the welcome are sent after it, and the draft leaves them out', () => {
  const { r, calls } = newRoom();
  r.edit({ title: 'mine', levelData: { background: { color: '#ffffff' } } });
  const ws = last();
  ws.open();
  assert.deepEqual(ws.sent, [], 'nothing before the welcome');
  ws.say(welcome({ title: 'theirs', description: 'kept', levelData: { background: { color: '#000000' }, post: { exposure: 1 } } }, 7));
  const w = calls.find((c) => c[0] === 'welcome');
  assert.deepEqual(w[3], { description: 'kept', levelData: { post: { exposure: 1 } } });
  assert.equal(w[4], 7);
  assert.deepEqual(ws.sent, [{ type: 'edit', fields: { title: 'mine', levelData: { background: { color: '#ffffff' } } } }]);
});

test('edits are coalesced to one message per interval, levelData merged per key', () => {
  const { r } = newRoom();
  const ws = last();
  ws.open();
  ws.say(welcome());
  r.edit({ title: 'a' });
  assert.equal(ws.sent.length, 1, 'the first edit goes at once');
  r.edit({ title: 'ab' });
  r.edit({ levelData: { camera: { position: [1, 2, 3], target: [0, 0, 0] } } });
  r.edit({ levelData: { post: { exposure: 2, toneMapping: 'aces' } } });
  r.edit({ title: 'abc' });
  assert.equal(ws.sent.length, 1);
  advance(100);
  assert.deepEqual(ws.sent[1], { type: 'edit', fields: {
    title: 'abc', levelData: { camera: { position: [1, 2, 3], target: [0, 0, 0] }, post: { exposure: 2, toneMapping: 'aces' } } } });
  // A drag of 60 events a second for 2 s stays far under the server's 30 messages/s.
  for (let i = 0; i < 120; i++) {
    r.edit({ levelData: { camera: { position: [i, 0, 0], target: [0, 0, 0] } } });
    advance(16);
  }
  advance(200);
  for (let i = 1; i < ws.times.length; i++) assert.ok(ws.times[i] - ws.times[i - 1] >= 100, `edits ${ws.times[i] - ws.times[i - 1]} ms apart`);
  assert.deepEqual(ws.sent.at(-1).fields.levelData.camera.position, [119, 0, 0], 'the last value arrives');
});

test('camera presence at most 5 a second, the latest one last', () => {
  const { r } = newRoom();
  const ws = last();
  ws.open();
  ws.say(welcome());
  for (let i = 0; i < 60; i++) {
    r.camera({ position: [i, 0, 0], target: [0, 0, 0] });
    advance(1000 / 60);
  }
  advance(200);
  const cams = ws.sent.filter((m) => m.type === 'camera');
  const times = ws.times.filter((_, i) => ws.sent[i].type === 'camera');
  assert.ok(cams.length >= 5, `${cams.length} camera messages in 1 s`);
  for (let i = 1; i < times.length; i++) assert.ok(times[i] - times[i - 1] >= 200, `camera messages ${times[i] - times[i - 1]} ms apart`);
  assert.deepEqual(cams.at(-1).camera.position, [59, 0, 0]);
});

test('reconnects with backoff after a drop, resyncs, and resets the backoff once welcomed', () => {
  const { r, calls } = newRoom();
  let ws = last();
  ws.open();
  ws.say(welcome());
  ws.serverClose(1012, 'restart');
  assert.deepEqual(calls.filter((c) => c[0] === 'state').at(-1), ['state', 'closed', 1012, 'restart']);
  assert.equal(FakeSocket.all.length, 1);
  r.edit({ description: 'typed while away' });
  advance(400);
  assert.equal(FakeSocket.all.length, 1, 'not before 0.5 s');
  advance(300);
  assert.equal(FakeSocket.all.length, 2, 'the first retry comes within 0.625 s');
  // Fails twice more: the delays grow.
  last().serverClose(1006);
  advance(749);
  assert.equal(FakeSocket.all.length, 2, 'the second retry waits at least 0.75 s');
  advance(501);
  assert.equal(FakeSocket.all.length, 3);
  ws = last();
  ws.open();
  ws.say(welcome({ title: 'from the draft' }, 3));
  assert.deepEqual(calls.filter((c) => c[0] === 'welcome').at(-1)[3], { title: 'from the draft' });
  assert.deepEqual(ws.sent, [{ type: 'edit', fields: { description: 'typed while away' } }]);
  ws.serverClose(1006);
  advance(625);
  assert.equal(FakeSocket.all.length, 4, 'the backoff starts again from 0.5 s');
  r.close();
});

test('no retry after a refusal; a new token reconnects', () => {
  for (const code of [4400, 4401, 4403, 4404, 4410]) {
    const { r, calls } = newRoom();
    const n = FakeSocket.all.length;
    last().serverClose(code, 'no');
    advance(60_000);
    assert.equal(FakeSocket.all.length, n, `retried after ${code}`);
    assert.deepEqual(calls.at(-1), ['state', 'refused', code, 'no']);
    r.reconnect();
    assert.equal(FakeSocket.all.length, n + 1);
    r.close();
  }
  // Full rooms, rate and size closes and server restarts are retried.
  for (const code of [4409, 4429, 1009, 1008, 1012, 1013, 1006]) {
    const { r } = newRoom();
    const n = FakeSocket.all.length;
    last().serverClose(code);
    advance(10_000);
    assert.equal(FakeSocket.all.length, n + 1, `no retry after ${code}`);
    r.close();
  }
});

test('a silent connection is dropped and replaced; pings keep a live one', () => {
  const { r } = newRoom({ pingIntervalMs: 1000 });
  const ws = last();
  ws.open();
  ws.say(welcome());
  advance(1000);
  assert.deepEqual(ws.sent.at(-1), { type: 'ping' });
  ws.say({ type: 'pong' });
  advance(2500);
  assert.equal(FakeSocket.all.length, 1, 'heard 2.5 s ago: alive');
  advance(2000);
  assert.equal(ws.closedWith, 1000, 'silent for over 3 intervals: dropped');
  advance(700);
  assert.equal(FakeSocket.all.length, 2, 'and replaced');
  r.close();
});

test('handlers get every server message; the client never announces a save', () => {
  const { r, calls } = newRoom();
  const ws = last();
  ws.open();
  ws.say(welcome());
  ws.say({ type: 'join', peer: peer('p2', 'Ada') });
  ws.say({ type: 'edit', from: 'p2', fields: { title: 't' }, seq: 4 });
  ws.say({ type: 'camera', from: 'p2', camera: { position: [1, 1, 1], target: [0, 0, 0] } });
  ws.say({ type: 'saved', splat: { id: 'x', title: 'stored' }, seq: 5 });
  ws.say({ type: 'error', code: 'READ_ONLY', message: 'no', issues: ['fields.title: x'] });
  ws.say({ type: 'leave', id: 'p2' });
  assert.deepEqual(calls.filter((c) => c[0] !== 'state' && c[0] !== 'welcome').map((c) => c[0]), ['join', 'edit', 'camera', 'saved', 'error', 'leave']);
  assert.deepEqual(calls.find((c) => c[0] === 'saved').slice(1), [{ id: 'x', title: 'stored' }]);
  assert.deepEqual(calls.find((c) => c[0] === 'error').slice(1), ['READ_ONLY', 'no', ['fields.title: x']]);
  assert.equal(typeof r.saved, 'undefined', 'a save is the server\'s to announce');
  r.edit({ title: 'now' });
  advance(500);
  assert.deepEqual(ws.sent.map((m) => m.type), ['edit']);
  r.close();
  advance(60_000);
  assert.equal(FakeSocket.all.length, 1, 'closed for good');
});

test('a session the server says may not edit sends no edit, but its camera', () => {
  const { r, calls } = newRoom();
  const ws = last();
  ws.open();
  r.edit({ title: 'typed before the welcome' });
  ws.say({ ...welcome({ title: 'the owner\'s' }, 2), canEdit: false });
  assert.equal(r.canEdit, false);
  const w = calls.find((c) => c[0] === 'welcome');
  assert.deepEqual(w[3], { title: 'the owner\'s' }, 'the draft is shown whole');
  assert.equal(w[5], false);
  r.edit({ title: 'mine' });
  r.camera({ position: [1, 2, 3], target: [0, 0, 0] });
  advance(1000);
  assert.deepEqual(ws.sent.map((m) => m.type), ['camera']);
  r.close();
});

test('a welcome without canEdit (an older server) lets the session edit', () => {
  const { r, calls } = newRoom();
  const ws = last();
  ws.open();
  ws.say(welcome());
  assert.equal(r.canEdit, true);
  assert.equal(calls.find((c) => c[0] === 'welcome')[5], true);
  r.edit({ title: 'x' });
  advance(500);
  assert.deepEqual(ws.sent.map((m) => m.type), ['edit']);
  r.close();
});

test('an edit too large for one frame is split per key; a key over the bound stays local', () => {
  const big = 'x'.repeat(40_000);
  const { messages, dropped } = room.splitEdit({ title: 't', levelData: { a: big, b: big, c: 'y'.repeat(70_000) } });
  assert.deepEqual(dropped, ['levelData.c']);
  assert.deepEqual(messages.map((m) => JSON.parse(m).fields), [{ title: 't' }, { levelData: { a: big } }, { levelData: { b: big } }]);
  for (const m of messages) assert.ok(Buffer.byteLength(m) <= room.MAX_MESSAGE_BYTES);
  assert.equal(room.splitEdit({ title: 'small' }).messages.length, 1);
});
