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
// splatId?, scoped?, name?}.
async function mint(body) {
  const res = await fetch('/session', {
    method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body),
  });
  const out = await res.json();
  if (!res.ok) throw new Error(`session ${body.type}: ${res.status} ${out.message ?? ''}`);
  record('host', 'session', { type: body.type, scoped: Boolean(body.scoped), ...(body.name ? { name: body.name } : {}), expiresAt: out.expiresAt });
  return out.sessionToken;
}

async function main() {
  const sdk = await import(`${config.gatewayUrl}/sdk/splathost-embed.js`);
  const baseUrl = config.gatewayUrl;

  // The viewer shows ?splatId= or the sample scene, as the signed-in customer (scenes start private).
  const viewerScene = params.get('splatId') || config.sampleSplatId;
  const viewer = sdk.mountViewer(document.getElementById('viewer-slot'), {
    baseUrl, sessionToken: await mint({ type: 'viewer', splatId: viewerScene, scoped: true }),
  });

  // The editor starts as a guest (blank, read-only for cloud actions) unless ?editor=scoped:
  // the host signs the user in when the editor reports authRequired.
  let scoped = params.get('editor') === 'scoped';
  const editor = sdk.mountEditor(document.getElementById('editor-slot'), {
    baseUrl, sessionToken: await mint({ type: 'editor', scoped }),
  });
  for (const name of EVENTS) editor.on(name, (payload) => record('editor', name, payload));

  editor.on('authRequired', () => { signIn.disabled = false; });
  editor.on('projectLoaded', ({ splatId }) => { splatInput.value = splatId; });
  editor.on('cloned', ({ splatId }) => { splatInput.value = splatId; });
  editor.on('saved', (p) => { if (p?.splatId) splatInput.value = p.splatId; });
  // A fresh session before the old one runs out, with the same scope: an open editor never dies.
  editor.on('sessionExpiring', async () => editor.updateSession(await mint({ type: 'editor', scoped })));

  signIn.addEventListener('click', async () => {
    signIn.disabled = true;
    scoped = true;
    editor.updateSession(await mint({ type: 'editor', scoped: true }));
    record('host', 'signedIn', { customer: config.customer });
  });
  document.getElementById('open-project').addEventListener('click', () => editor.openProject(splatInput.value.trim()));
  document.getElementById('create-project').addEventListener('click', () => editor.createProject());

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
      const token = await mint(p.session);
      const e = sdk.mountEditor(document.getElementById(p.slot), { baseUrl, sessionToken: token });
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
