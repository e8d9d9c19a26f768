// Unit tests of the SDK's iframe mounting and message filtering, against a small fake DOM: the
// SDK touches only el.ownerDocument, its defaultView's message listeners and the iframe.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mountEditor, mountViewer } from '../../dist/sdk/splathost-embed.js';

const BASE = 'https://splats.example.com';
const EMBED_ORIGIN = 'https://splats.example.com';
const HOST = 'https://host.example.org';

function fakeDom() {
  const listeners = new Set();
  const win = {
    location: { origin: HOST },
    addEventListener(type, fn) { if (type === 'message') listeners.add(fn); },
    removeEventListener(type, fn) { if (type === 'message') listeners.delete(fn); },
  };
  const doc = {
    defaultView: win,
    createElement(tag) {
      assert.equal(tag, 'iframe');
      const sent = [];
      const frame = {
        tagName: 'IFRAME', attributes: {}, style: {}, removed: false, sent,
        contentWindow: { postMessage(msg, target) { sent.push({ msg, target }); } },
        setAttribute(k, v) { this.attributes[k] = v; },
        remove() { this.removed = true; },
      };
      return frame;
    },
  };
  const el = { ownerDocument: doc, children: [], appendChild(c) { this.children.push(c); } };
  // dispatch delivers a message event the way the browser would, to every current listener.
  const dispatch = (event) => { for (const fn of [...listeners]) fn(event); };
  return { win, el, dispatch, listeners };
}

const fromEditor = (frame, type, payload = null, over = {}) => ({
  origin: EMBED_ORIGIN, source: frame.contentWindow,
  data: { source: 'service-editor', type, payload }, ...over,
});

test('mountEditor creates the iframe with session and hostOrigin', () => {
  const { el } = fakeDom();
  const ed = mountEditor(el, { baseUrl: BASE + '/', sessionToken: 'tok.en/+=' });
  assert.equal(el.children.length, 1);
  const src = new URL(ed.iframe.src);
  assert.equal(src.origin + src.pathname, BASE + '/embed/editor');
  assert.equal(src.searchParams.get('session'), 'tok.en/+=');
  assert.equal(src.searchParams.get('hostOrigin'), HOST);
  // The editor checks hostOrigin against the referrer's origin where the browser has no
  // location.ancestorOrigins: the SDK sends the origin, nothing more.
  assert.equal(ed.iframe.referrerPolicy, 'origin');
});

test('mountViewer creates the viewer iframe with session and hostOrigin, and destroy removes it', () => {
  const { el, listeners } = fakeDom();
  const v = mountViewer(el, { baseUrl: BASE, sessionToken: 'abc' });
  const src = new URL(v.iframe.src);
  assert.equal(src.pathname, '/embed/viewer');
  assert.equal(src.searchParams.get('session'), 'abc');
  // The viewer takes host commands too, under the editor's origin rules.
  assert.equal(src.searchParams.get('hostOrigin'), HOST);
  assert.equal(v.iframe.referrerPolicy, 'origin');
  assert.equal(listeners.size, 1);
  v.destroy();
  assert.equal(v.iframe.removed, true);
  assert.equal(listeners.size, 0);
});

const fromViewer = (frame, type, payload = null, over = {}) => ({
  origin: EMBED_ORIGIN, source: frame.contentWindow,
  data: { source: 'splathost-viewer', type, payload }, ...over,
});

test('viewer commands wait for its ready, then go to the embed origin only', () => {
  const { el, dispatch } = fakeDom();
  const v = mountViewer(el, { baseUrl: BASE, sessionToken: 't' });
  const camera = { position: [1, 2, 3], target: [0, 0, 0], fov: 50 };
  v.setCamera(camera);
  assert.equal(v.iframe.sent.length, 0, 'nothing before ready');
  // An editor's ready (another protocol) or a foreign one releases nothing.
  dispatch(fromEditor(v.iframe, 'ready'));
  dispatch(fromViewer(v.iframe, 'ready', null, { origin: 'https://evil.example' }));
  assert.equal(v.iframe.sent.length, 0);
  dispatch(fromViewer(v.iframe, 'ready'));
  v.goToAnnotation('door-1');
  assert.deepEqual(v.iframe.sent, [
    { msg: { source: 'splathost-host', type: 'setCamera', payload: camera }, target: EMBED_ORIGIN },
    { msg: { source: 'splathost-host', type: 'goToAnnotation', payload: { id: 'door-1' } }, target: EMBED_ORIGIN },
  ]);
});

test('viewer events reach their handlers; other sources and windows do not', () => {
  const { el, dispatch } = fakeDom();
  const v = mountViewer(el, { baseUrl: BASE, sessionToken: 't' });
  const got = [];
  v.on('ready', (p) => got.push(['ready', p]));
  const off = v.on('annotation', (p) => got.push(['annotation', p]));
  dispatch(fromViewer(v.iframe, 'ready'));
  dispatch(fromViewer(v.iframe, 'annotation', { id: 'a', title: 'A' }));
  dispatch(fromEditor(v.iframe, 'annotation', { id: 'x', title: 'editor protocol' }));
  dispatch(fromViewer(v.iframe, 'annotation', { id: 'y', title: 'foreign' }, { origin: HOST }));
  dispatch(fromViewer(v.iframe, 'annotation', { id: 'z', title: 'other window' }, { source: { postMessage() {} } }));
  off();
  dispatch(fromViewer(v.iframe, 'annotation', { id: 'b', title: 'after off' }));
  assert.deepEqual(got, [['ready', null], ['annotation', { id: 'a', title: 'A' }]]);
});

test('missing options throw', () => {
  const { el } = fakeDom();
  assert.throws(() => mountEditor(el, { baseUrl: BASE }), TypeError);
  assert.throws(() => mountViewer(el, { sessionToken: 'x' }), TypeError);
});

test('events reach handlers with their payload', () => {
  const { el, dispatch } = fakeDom();
  const ed = mountEditor(el, { baseUrl: BASE, sessionToken: 't' });
  const got = [];
  ed.on('saved', (p) => got.push(['saved', p]));
  ed.on('ready', (p) => got.push(['ready', p]));
  dispatch(fromEditor(ed.iframe, 'ready'));
  dispatch(fromEditor(ed.iframe, 'saved', { splatId: 'a'.repeat(24) }));
  assert.deepEqual(got, [['ready', null], ['saved', { splatId: 'a'.repeat(24) }]]);
});

test('foreign origin, foreign source and foreign envelopes are ignored', () => {
  const { el, dispatch } = fakeDom();
  const ed = mountEditor(el, { baseUrl: BASE, sessionToken: 't' });
  let calls = 0;
  ed.on('saved', () => calls++);
  const otherWindow = { postMessage() {} };
  dispatch(fromEditor(ed.iframe, 'saved', {}, { origin: 'https://evil.example' }));
  dispatch(fromEditor(ed.iframe, 'saved', {}, { origin: HOST }));
  dispatch(fromEditor(ed.iframe, 'saved', {}, { source: otherWindow }));
  dispatch(fromEditor(ed.iframe, 'saved', {}, { source: null }));
  dispatch({ origin: EMBED_ORIGIN, source: ed.iframe.contentWindow, data: { source: 'splathost-host', type: 'saved', payload: {} } });
  dispatch({ origin: EMBED_ORIGIN, source: ed.iframe.contentWindow, data: 'saved' });
  dispatch({ origin: EMBED_ORIGIN, source: ed.iframe.contentWindow, data: null });
  assert.equal(calls, 0);
  dispatch(fromEditor(ed.iframe, 'saved', {}));
  assert.equal(calls, 1);
});

test('a second editor does not see the first one\'s messages', () => {
  const { el, dispatch } = fakeDom();
  const a = mountEditor(el, { baseUrl: BASE, sessionToken: 't' });
  const b = mountEditor(el, { baseUrl: BASE, sessionToken: 't' });
  let aCalls = 0, bCalls = 0;
  a.on('dirtyChanged', () => aCalls++);
  b.on('dirtyChanged', () => bCalls++);
  dispatch(fromEditor(a.iframe, 'dirtyChanged', { dirty: true }));
  assert.deepEqual([aCalls, bCalls], [1, 0]);
});

test('unsubscribe stops one handler only', () => {
  const { el, dispatch } = fakeDom();
  const ed = mountEditor(el, { baseUrl: BASE, sessionToken: 't' });
  const seen = [];
  const off = ed.on('dirtyChanged', (p) => seen.push(['first', p.dirty]));
  ed.on('dirtyChanged', (p) => seen.push(['second', p.dirty]));
  dispatch(fromEditor(ed.iframe, 'dirtyChanged', { dirty: true }));
  off();
  off(); // twice is harmless
  dispatch(fromEditor(ed.iframe, 'dirtyChanged', { dirty: false }));
  assert.deepEqual(seen, [['first', true], ['second', true], ['second', false]]);
});

test('a throwing handler does not stop the others', () => {
  const { el, dispatch } = fakeDom();
  const ed = mountEditor(el, { baseUrl: BASE, sessionToken: 't' });
  let ok = 0;
  const origError = console.error;
  console.error = () => {};
  try {
    ed.on('error', () => { throw new Error('host bug'); });
    ed.on('error', () => ok++);
    dispatch(fromEditor(ed.iframe, 'error', { message: 'x' }));
  } finally {
    console.error = origError;
  }
  assert.equal(ok, 1);
});

test('commands wait for ready, then go to the embed origin only', () => {
  const { el, dispatch } = fakeDom();
  const ed = mountEditor(el, { baseUrl: BASE, sessionToken: 't' });
  ed.openProject('b'.repeat(24));
  ed.updateSession('t2');
  assert.equal(ed.iframe.sent.length, 0, 'nothing before ready');
  dispatch(fromEditor(ed.iframe, 'ready'));
  ed.createProject();
  assert.deepEqual(ed.iframe.sent, [
    { msg: { source: 'splathost-host', type: 'openProject', payload: { splatId: 'b'.repeat(24) } }, target: EMBED_ORIGIN },
    { msg: { source: 'splathost-host', type: 'updateSession', payload: { sessionToken: 't2' } }, target: EMBED_ORIGIN },
    { msg: { source: 'splathost-host', type: 'createProject', payload: {} }, target: EMBED_ORIGIN },
  ]);
});

test('a forged ready does not release queued commands', () => {
  const { el, dispatch } = fakeDom();
  const ed = mountEditor(el, { baseUrl: BASE, sessionToken: 't' });
  ed.updateSession('secret-token');
  dispatch(fromEditor(ed.iframe, 'ready', null, { origin: 'https://evil.example' }));
  assert.equal(ed.iframe.sent.length, 0);
});

test('destroy removes the iframe, the listener and the handlers', () => {
  const { el, dispatch, listeners } = fakeDom();
  const ed = mountEditor(el, { baseUrl: BASE, sessionToken: 't' });
  let calls = 0;
  ed.on('ready', () => calls++);
  assert.equal(listeners.size, 1);
  ed.destroy();
  assert.equal(listeners.size, 0);
  assert.equal(ed.iframe.removed, true);
  dispatch(fromEditor(ed.iframe, 'ready'));
  ed.openProject('c'.repeat(24));
  assert.equal(calls, 0);
  assert.equal(ed.iframe.sent.length, 0);
});
