// The editor embed (/embed/editor): opens the session's scene or a blank canvas, edits title,
// description, visibility and the camera, uploads a picked file as a new scene, saves,
// publishes and duplicates, and reports every step to the host page (docs/embeds.md).
import {
  EDITOR_SOURCE, HOST_SOURCE, type EditorEventMap, type EditorEventName, type HostMessage, type Visibility,
} from '../../sdk/src/index.ts';
import { Api, ApiError, type Splat, readBoot } from './api.ts';
import { hostOrigin as hostOriginOf } from './host.ts';
import { cameraFromLevelData } from './orbit.ts';
import { Stage, Superseded, formatOfName, formatOfSplat, hideError, setStatus, showError } from './stage.ts';

const boot = readBoot();
const api = new Api(boot.sessionToken);
const stage = new Stage(document.body);
const params = new URLSearchParams(location.search);

// ---- messages to and from the host -------------------------------------------------------

/** Where events go and host messages come from (null: nowhere; the console says why). */
const hostOrigin: string | null = hostOriginOf('editor', params);

function post<K extends EditorEventName>(type: K, payload: EditorEventMap[K]): void {
  if (hostOrigin) window.parent.postMessage({ source: EDITOR_SOURCE, type, payload }, hostOrigin);
}

window.addEventListener('message', (event: MessageEvent) => {
  if (!hostOrigin || event.source !== window.parent || event.origin !== hostOrigin) return;
  const msg = event.data as HostMessage | null;
  if (!msg || typeof msg !== 'object' || msg.source !== HOST_SOURCE) return;
  switch (msg.type) {
    case 'openProject':
      if (typeof msg.payload?.splatId === 'string') void openProject(msg.payload.splatId, true);
      else post('error', { message: 'openProject needs a splatId' });
      break;
    case 'createProject':
      createProject();
      break;
    case 'updateSession':
      updateSession(msg.payload?.sessionToken);
      break;
  }
});

// ---- session -----------------------------------------------------------------------------

interface Claims {
  integrationId?: string;
  externalUserId?: string;
  exp?: number;
}

/** The token's claims, unverified: the server checks the signature, the editor only needs to
 * know its integration, scope and expiry. */
function claimsOf(token: string): Claims | null {
  try {
    const b64 = token.split('.')[1].replace(/-/g, '+').replace(/_/g, '/');
    return JSON.parse(atob(b64.padEnd(Math.ceil(b64.length / 4) * 4, '=')));
  } catch {
    return null;
  }
}

let scoped = boot.scoped;
let expiryTimer = 0;

/** Posts sessionExpiring about a minute before the session ends. */
function armExpiry(expiresAt: string): void {
  clearTimeout(expiryTimer);
  const at = Date.parse(expiresAt);
  if (!Number.isFinite(at)) return;
  expiryTimer = window.setTimeout(() => post('sessionExpiring', { expiresAt }), Math.max(0, at - Date.now() - 60_000));
}

function updateSession(token: unknown): void {
  const next = typeof token === 'string' ? claimsOf(token) : null;
  const current = claimsOf(api.token);
  if (!next || typeof next.exp !== 'number') {
    post('error', { message: 'updateSession: not a session token' });
    return;
  }
  if (current?.integrationId && next.integrationId !== current.integrationId) {
    post('error', { message: 'updateSession: the token belongs to another integration' });
    return;
  }
  api.token = token as string;
  scoped = !!next.externalUserId;
  armExpiry(new Date(next.exp * 1000).toISOString());
}

// ---- the panel ---------------------------------------------------------------------------

function h<K extends keyof HTMLElementTagNameMap>(tag: K, attrs: Record<string, string> = {}, text = ''): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, v);
  if (text) el.textContent = text;
  return el;
}

function field(label: string, control: HTMLElement): HTMLLabelElement {
  const l = h('label', {}, label);
  l.append(control);
  return l;
}

const ui = {
  title: h('input', { name: 'title', type: 'text', maxlength: '200', autocomplete: 'off' }),
  description: h('textarea', { name: 'description', maxlength: '2000', rows: '4' }),
  visibility: h('select', { name: 'visibility' }),
  file: h('input', { type: 'file', name: 'scene-file', accept: '.ply,.splat,.ksplat,.sog' }),
  save: h('button', { type: 'button', 'data-action': 'save' }, 'Save'),
  publish: h('button', { type: 'button', 'data-action': 'publish' }, 'Publish'),
  duplicate: h('button', { type: 'button', 'data-action': 'duplicate' }, 'Duplicate'),
  status: h('div', { class: 'splathost-status', role: 'status', 'aria-live': 'polite' }),
};
for (const v of ['private', 'public']) ui.visibility.append(h('option', { value: v }, v === 'private' ? 'Private' : 'Public'));
{
  const panel = h('form', { class: 'splathost-panel', 'aria-label': 'Scene settings' });
  panel.addEventListener('submit', (e) => e.preventDefault());
  const actions = h('div', { class: 'splathost-actions' });
  actions.append(ui.save, ui.publish, ui.duplicate);
  panel.append(
    h('h1', {}, 'Scene'),
    field('Title', ui.title),
    field('Description', ui.description),
    field('Visibility', ui.visibility),
    field('Scene file (.ply, .splat, .ksplat, .sog)', ui.file),
    actions,
    ui.status,
  );
  document.body.append(panel);
}

function say(message: string, tone: 'info' | 'error' = 'info'): void {
  ui.status.textContent = message;
  ui.status.dataset.tone = tone;
}

// ---- editor state ------------------------------------------------------------------------

/** The open scene (null on a blank canvas) and a picked file not yet uploaded. */
let current: Splat | null = null;
let pendingFile: File | null = null;
let dirty = false;
let busy = false;

function setDirty(next: boolean): void {
  document.documentElement.dataset.dirty = String(next);
  if (next === dirty) return;
  dirty = next;
  post('dirtyChanged', { dirty });
}

function setBusy(next: boolean): void {
  busy = next;
  for (const b of [ui.save, ui.publish, ui.duplicate]) b.disabled = next;
}

function fill(splat: Splat | null): void {
  ui.title.value = splat?.title ?? '';
  ui.description.value = splat?.description ?? '';
  ui.visibility.value = splat?.visibility ?? 'private';
  ui.file.value = '';
  document.documentElement.dataset.splatId = splat?.id ?? '';
}

ui.title.addEventListener('input', () => setDirty(true));
ui.description.addEventListener('input', () => setDirty(true));
ui.visibility.addEventListener('change', () => setDirty(true));
stage.orbit.onChange = () => {
  if (current || pendingFile) setDirty(true);
};

/** Shows a scene; failures of the load become the page's error state and an `error` event. */
async function show(load: () => Promise<void>): Promise<boolean> {
  setStatus('loading');
  hideError();
  try {
    await load();
    setStatus('rendered');
    return true;
  } catch (err) {
    if (err instanceof Superseded) return false;
    const message = err instanceof Error ? err.message : String(err);
    showError(`This scene could not be shown: ${message}`);
    post('error', { message });
    return false;
  }
}

async function openProject(splatId: string, announce: boolean): Promise<boolean> {
  let splat: Splat;
  try {
    setStatus('loading');
    splat = await api.splat(splatId);
  } catch (err) {
    failed(err, 'open');
    showError(`This scene could not be opened: ${err instanceof Error ? err.message : String(err)}`);
    return false;
  }
  current = splat;
  pendingFile = null;
  fill(splat);
  say('');
  setDirty(false);
  const ok = await show(() => stage.show({ format: formatOfSplat(splat), url: splat.splatUrl }, cameraFromLevelData(splat.levelData)));
  if (ok && announce) post('projectLoaded', { splatId: splat.id });
  return ok;
}

function createProject(): void {
  stage.clear();
  current = null;
  pendingFile = null;
  fill(null);
  hideError();
  setStatus('blank');
  setDirty(false);
  say('');
  post('projectCreated', null);
}

ui.file.addEventListener('change', () => {
  const file = ui.file.files?.[0];
  if (!file) return;
  const format = formatOfName(file.name);
  if (!format) {
    say('Pick a .ply, .splat, .ksplat or .sog file.', 'error');
    post('error', { message: `unsupported scene file: ${file.name}` });
    return;
  }
  // A picked file starts a new scene (it is uploaded on save).
  current = null;
  pendingFile = file;
  document.documentElement.dataset.splatId = '';
  if (!ui.title.value.trim()) ui.title.value = file.name.replace(/\.[^.]+$/, '');
  setDirty(true);
  void show(() => stage.show({ format, file }, null));
});

// ---- cloud actions -----------------------------------------------------------------------

/** Turns a failed call into the matching event (authRequired, limitReached or error). Always
 * returns true, so a caller can `return failed(...)`. */
function failed(err: unknown, action: string): true {
  if (err instanceof ApiError) {
    const b = err.body;
    if (err.status === 403 && err.code === 'AUTH_REQUIRED') {
      say('Sign in to ' + action + ' this scene.', 'error');
      post('authRequired', { action, message: err.message });
      return true;
    }
    if (err.status === 413 && err.code === 'STORAGE_QUOTA_EXCEEDED') {
      say('There is not enough storage left for this.', 'error');
      post('limitReached', {
        dimension: 'storageBytes', scope: b.scope === 'account' ? 'account' : 'customer',
        usedBytes: Number(b.usedBytes), limitBytes: Number(b.limitBytes),
        ...(typeof b.requestedBytes === 'number' ? { requestedBytes: b.requestedBytes } : {}),
      });
      return true;
    }
    if (err.status === 403 && err.code === 'plan_limit' && b.dimension === 'splatCount') {
      say('The scene limit has been reached.', 'error');
      post('limitReached', {
        dimension: 'splatCount', scope: b.scope === 'account' ? 'account' : 'customer',
        usedBytes: Number(b.current), limitBytes: Number(b.limit), requestedBytes: 1,
      });
      return true;
    }
  }
  const message = err instanceof Error ? err.message : String(err);
  say(`Could not ${action}: ${message}`, 'error');
  post('error', { message });
  return true;
}

/** A guest session (no customer) may not act on the cloud: the host must sign the user in. */
function guest(action: string): boolean {
  if (scoped) return false;
  say('Sign in to ' + action + ' this scene.', 'error');
  post('authRequired', { action, message: 'this action needs a signed-in user' });
  return true;
}

/** Runs one cloud action at a time, with the buttons disabled. */
function action(name: string, run: () => Promise<void>): void {
  if (busy || guest(name)) return;
  setBusy(true);
  say('');
  run()
    .catch((err) => failed(err, name))
    .finally(() => setBusy(false));
}

function levelData(): Record<string, unknown> {
  return { ...(current?.levelData ?? {}), camera: stage.orbit.get() };
}

const CONTENT_TYPES: Record<string, string> = {
  ply: 'application/ply', splat: 'application/splat', ksplat: 'application/ksplat', sog: 'application/sog',
};

/** Uploads the picked file and commits it as a new scene; returns the new scene. */
async function commitNew(file: File, title: string): Promise<Splat> {
  const contentType = CONTENT_TYPES[formatOfName(file.name) ?? ''] ?? 'application/octet-stream';
  const { body: up } = await api.call('POST', '/api/embed/editor/uploads/splat-file', { fileName: file.name, contentType, fileSize: file.size });
  say('Uploading…');
  // Exactly the signed headers: the store refuses anything else.
  const put = await fetch(up.uploadUrl, {
    method: 'PUT', body: file,
    headers: { 'Content-Type': contentType, 'Cache-Control': 'public, max-age=31536000, immutable' },
  });
  if (!put.ok) throw new Error(`the upload failed (${put.status})`);
  const { body } = await api.call('POST', '/api/embed/editor/splats', {
    title, description: ui.description.value, visibility: ui.visibility.value as Visibility,
    splatType: 'file', splatUrl: up.fileUrl, levelData: levelData(),
  });
  return api.splat(body.splatId);
}

ui.save.addEventListener('click', () => action('save', async () => {
  const title = ui.title.value.trim();
  if (!title) throw new Error('the title must not be empty');
  if (current) {
    const { body } = await api.call('PATCH', `/api/embed/editor/splats/${current.id}`, {
      title, description: ui.description.value, levelData: levelData(),
    });
    current = { ...current, ...body.splat };
    setDirty(false);
    say('Saved.');
    post('saved', {});
    return;
  }
  if (!pendingFile) throw new Error('pick a scene file first');
  current = await commitNew(pendingFile, title);
  pendingFile = null;
  document.documentElement.dataset.splatId = current.id;
  setDirty(false);
  say('Saved.');
  post('saved', { splatId: current.id });
}));

ui.publish.addEventListener('click', () => action('publish', async () => {
  if (!current) throw new Error('save the scene before publishing it');
  // The visibility the user picked, or public when they left it as stored.
  const picked = ui.visibility.value as Visibility;
  const visibility: Visibility = picked !== current.visibility ? picked : 'public';
  const { body } = await api.call('PATCH', `/api/embed/editor/splats/${current.id}`, { visibility });
  const splatId = current.id;
  current = { ...current, ...body.splat };
  ui.visibility.value = visibility;
  say(visibility === 'public' ? 'Published.' : 'Made private.');
  post('published', { splatId, visibility });
}));

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Clones the scene: 201 at once, or a job polled until it finishes (429 resumes our own job). */
async function cloneOf(sourceId: string): Promise<{ splatId: string; sourceSplatId: string }> {
  let res: { status: number; body: any };
  try {
    res = await api.call('POST', `/api/embed/editor/splats/${sourceId}/clone`);
  } catch (err) {
    if (!(err instanceof ApiError && err.status === 429 && err.body.jobId && err.body.sourceSplatId === sourceId)) throw err;
    res = { status: 202, body: err.body };
  }
  const jobId: string | undefined = res.body.jobId;
  while (res.body.status !== 'success') {
    if (!jobId) throw new Error('the clone answered neither a scene nor a job');
    say(`Duplicating… ${res.body.copiedObjects ?? 0}/${res.body.totalObjects ?? '?'}`);
    await sleep(1500);
    res = await api.call('GET', `/api/embed/editor/splats/${sourceId}/clone/${jobId}`);
  }
  return { splatId: res.body.splatId, sourceSplatId: res.body.sourceSplatId ?? sourceId };
}

ui.duplicate.addEventListener('click', () => action('duplicate', async () => {
  if (!current) throw new Error('save the scene before duplicating it');
  const copy = await cloneOf(current.id);
  post('cloned', copy);
  await openProject(copy.splatId, false);
  say('Duplicated.');
}));

// ---- start -------------------------------------------------------------------------------

async function start(): Promise<void> {
  armExpiry(boot.expiresAt);
  if (boot.splatId) {
    await openProject(boot.splatId, true);
  } else {
    fill(null);
    setStatus('blank');
    setDirty(false);
  }
  post('ready', null);
}

start().catch((err) => {
  console.error('splathost editor:', err);
  showError(`The editor could not start: ${err instanceof Error ? err.message : String(err)}`);
  post('error', { message: String(err) });
});
