// The demo host page: mounts the viewer and the editor with the JS SDK served by the gateway and
// logs every editor event. Sessions come from this page's own server, which holds the keys.
const config = JSON.parse(document.getElementById('demo-config').textContent);
const params = new URLSearchParams(location.search);
const log = document.getElementById('event-log');
const splatInput = document.getElementById('splat-id');
const signIn = document.getElementById('sign-in');

// Every event of the interface's Events table.
const EVENTS = ['ready', 'projectLoaded', 'projectCreated', 'saved', 'published', 'cloned',
  'dirtyChanged', 'authRequired', 'sessionExpiring', 'limitReached', 'error'];

// record adds one line to the event log; data-* attributes keep the payload machine-readable.
function record(source, type, payload) {
  const li = document.createElement('li');
  li.dataset.source = source;
  li.dataset.type = type;
  li.dataset.payload = JSON.stringify(payload ?? null);
  li.textContent = `${new Date().toISOString().slice(11, 23)} ${source} ${type} ${payload == null ? '' : JSON.stringify(payload)}`;
  log.append(li);
  log.scrollTop = log.scrollHeight;
}

// mint asks this page's server for a session; the secret key stays there. body: {type,
// splatId?, scoped?, name?, coEdit?}. A refusal throws the server's message.
async function mint(body) {
  const res = await fetch('/session', {
    method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body),
  });
  const out = await res.json();
  if (!res.ok) throw new Error(out.message || `the ${body.type} session was refused (${res.status})`);
  record('host', 'session', { type: body.type, scoped: Boolean(body.scoped), ...(body.name ? { name: body.name } : {}), expiresAt: out.expiresAt });
  return out.sessionToken;
}

// explain puts what went wrong in an embed's place, so a refused scene reads as a message
// instead of an empty box, and logs it; with ?splatId= it links back to the sample.
function explain(slot, kind, message) {
  const box = document.createElement('div');
  box.className = 'slot-message';
  box.setAttribute('role', 'alert');
  const head = document.createElement('strong');
  head.textContent = `The ${kind} could not open.`;
  const text = document.createElement('p');
  text.textContent = message;
  box.append(head, text);
  if (params.has('splatId')) {
    const back = document.createElement('a');
    back.href = '/';
    back.textContent = 'Open the sample scene instead';
    box.append(back);
  }
  slot.replaceChildren(box);
  record('host', 'host-error', { message });
}

// mountIn mints a session and mounts an embed with it in the slot (mount(slot, token)); when the
// session is refused the slot explains why and the result is null.
async function mountIn(slotId, kind, session, mount) {
  const slot = document.getElementById(slotId);
  let token;
  try {
    token = await mint(session);
  } catch (err) {
    explain(slot, kind, String(err?.message ?? err));
    return null;
  }
  slot.replaceChildren(); // an earlier refusal's message
  return mount(slot, token);
}

async function main() {
  const sdk = await import(`${config.gatewayUrl}/sdk/splathost-embed.js`);
  const baseUrl = config.gatewayUrl;

  // Both embeds open ?splatId= or the sample scene (the hero: a column on its ground plane), as
  // the signed-in customer (scenes start private).
  const scene = params.get('splatId') || config.sampleSplatId;
  splatInput.value = scene;
  const viewer = await mountIn('viewer-slot', 'viewer', { type: 'viewer', splatId: scene, scoped: true },
    (slot, sessionToken) => sdk.mountViewer(slot, { baseUrl, sessionToken }));

  // The editor starts signed in with the scene open, unless ?editor=guest: a blank guest
  // session, read-only for cloud actions, whose first save asks authRequired and the host signs
  // the user in. With ?pair=1 it starts blank, so the scene's room holds just the two editors.
  let scoped = params.get('editor') !== 'guest';
  const opened = scoped && params.get('pair') !== '1' ? { splatId: scene } : {};
  const editor = await mountIn('editor-slot', 'editor', { type: 'editor', scoped, ...opened },
    (slot, sessionToken) => sdk.mountEditor(slot, { baseUrl, sessionToken }));
  for (const id of ['open-project', 'create-project']) document.getElementById(id).disabled = !editor;
  if (editor) {
    for (const name of EVENTS) editor.on(name, (payload) => record('editor', name, payload));
    editor.on('authRequired', () => { signIn.disabled = false; });
    editor.on('projectLoaded', ({ splatId }) => { splatInput.value = splatId; });
    editor.on('cloned', ({ splatId }) => { splatInput.value = splatId; });
    editor.on('saved', (p) => { if (p?.splatId) splatInput.value = p.splatId; });
    // A fresh session before the old one runs out, with the same scope: an open editor never
    // dies. It names no scene: the editor keeps whichever it has open.
    editor.on('sessionExpiring', async () => editor.updateSession(await mint({ type: 'editor', scoped })));

    signIn.addEventListener('click', async () => {
      signIn.disabled = true;
      scoped = true;
      editor.updateSession(await mint({ type: 'editor', scoped: true }));
      record('host', 'signedIn', { customer: config.customer });
    });
    document.getElementById('open-project').addEventListener('click', () => editor.openProject(splatInput.value.trim()));
    document.getElementById('create-project').addEventListener('click', () => editor.createProject());
  }

  // Two editors side by side on one scene: two sessions, so two people in the scene's room.
  const pair = [];
  async function openPair() {
    for (const e of pair.splice(0)) e.destroy();
    const splatId = splatInput.value.trim();
    const right = document.getElementById('pair-right').value;
    const second = {
      guest: { type: 'editor' },
      coedit: { type: 'editor', coEdit: true, splatId },
    }[right] ?? { type: 'editor', scoped: true, name: 'Second demo user' };
    const people = [
      { slot: 'pair-a-slot', source: 'editor-a', session: { type: 'editor', scoped: true, name: 'Demo customer' } },
      { slot: 'pair-b-slot', source: 'editor-b', session: second },
    ];
    for (const p of people) {
      const e = await mountIn(p.slot, 'editor', p.session, (slot, sessionToken) => sdk.mountEditor(slot, { baseUrl, sessionToken }));
      if (!e) continue;
      for (const name of EVENTS) e.on(name, (payload) => record(p.source, name, payload));
      // Opened once the editor is ready: a blank session opens any scene its scope may see.
      e.on('ready', () => e.openProject(splatId));
      e.on('sessionExpiring', async () => e.updateSession(await mint(p.session)));
      pair.push(e);
    }
  }
  document.getElementById('open-pair').addEventListener('click', () => {
    openPair().catch((err) => record('host', 'host-error', { message: String(err?.message ?? err) }));
  });
  window.demo = { viewer, editor, pair };
  // ?pair=1 opens them at once (a link to the side-by-side view).
  if (params.get('pair') === '1') await openPair();
}

main().catch((err) => record('host', 'host-error', { message: String(err?.message ?? err) }));
