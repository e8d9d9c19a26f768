// The editor embed (/embed/editor): opens the session's scene or a blank canvas and edits all of
// it — title, description, visibility, the allow* toggles, and every levelData v1 field (start
// camera, orientation, background, exposure and tone mapping, annotations, audio) — together
// with everyone else who has the scene open (the multiplayer room, room.ts); uploads a picked
// file as a new scene, saves (with a thumbnail from the canvas on a scene's first save),
// publishes and duplicates, and reports every step to the host page (docs/embeds.md).
import {
  EDITOR_SOURCE, HOST_SOURCE, type EditorEventMap, type EditorEventName, type HostMessage, type Visibility,
} from '../../sdk/src/protocol.ts';
import { Api, ApiError, type Splat, readBoot } from './api.ts';
import { isNewerSave, isReadOnly, rightsChanged, setReadOnly } from './authority.ts';
import { hostOrigin as hostOriginOf } from './host.ts';
import { Hotspots } from './hotspots.ts';
import { type Annotation, type LevelV1, MAX_ANNOTATIONS, TONE_MAPPINGS, type ToneMapping, readLevel, rotationOf } from './level.ts';
import { type Vec3, cameraFromLevelData } from './orbit.ts';
import { Presence } from './presence.ts';
import { Room, type RoomFields } from './room.ts';
import { CLEAR_RGB, formatOfName, sourceOfSplat } from './engine.ts';
import { Stage, Superseded, hideError, setStatus, showError } from './stage.ts';

const boot = readBoot();
const api = new Api(boot.sessionToken);
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
  // A room that refused the old token (expired, 4401) is tried again with the new one, as is one
  // whose rights the new token may change (another customer, coEdit): its welcome says.
  if (room && (room.state === 'refused' || rightsChanged(current, next))) room.reconnect();
  armExpiry(new Date(next.exp * 1000).toISOString());
}

// ---- layout --------------------------------------------------------------------------------

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

/** A checkbox with its label on the same line. */
function toggle(label: string, control: HTMLInputElement): HTMLLabelElement {
  const l = h('label', { class: 'splathost-toggle' });
  l.append(control, document.createTextNode(label));
  return l;
}

function section(name: string, title: string, ...children: HTMLElement[]): HTMLElement {
  const s = h('section', { class: 'splathost-section', 'data-section': name, 'aria-label': title });
  s.append(h('h2', {}, title), ...children);
  return s;
}

// The scene's view and the panel sit side by side (stacked on narrow screens): the panel never
// covers the scene, so what the canvas shows — and the thumbnail taken from it — is all scene.
const layout = h('div', { class: 'splathost-editor' });
const view = h('div', { class: 'splathost-view' });
// The others' camera markers follow our camera over the view.
const markerLayer = h('div', { class: 'splathost-overlay', 'data-layer': 'peers' });
view.append(markerLayer);
layout.append(view);
document.body.append(layout);
const stage = new Stage(view);

const DEFAULT_BACKGROUND = `#${CLEAR_RGB.map((c) => c.toString(16).padStart(2, '0')).join('')}`;

const ui = {
  presence: h('div', { class: 'splathost-presence', hidden: '' }),
  title: h('input', { name: 'title', type: 'text', maxlength: '200', autocomplete: 'off' }),
  description: h('textarea', { name: 'description', maxlength: '2000', rows: '3' }),
  visibility: h('select', { name: 'visibility' }),
  allowComments: h('input', { name: 'allowComments', type: 'checkbox' }),
  allowReactions: h('input', { name: 'allowReactions', type: 'checkbox' }),
  file: h('input', { type: 'file', name: 'scene-file', accept: '.ply,.splat,.ksplat,.sog' }),
  startCamera: h('button', { type: 'button', 'data-action': 'set-start-camera' }, 'Set start camera'),
  goStart: h('button', { type: 'button', 'data-action': 'go-start-camera' }, 'Go to start camera'),
  flip: h('button', { type: 'button', 'data-action': 'flip', title: 'Turn the scene 180° about X' }, 'Flip'),
  rotate: h('button', { type: 'button', 'data-action': 'rotate', title: 'Turn the scene 90° about the vertical' }, 'Rotate 90°'),
  rotation: h('output', { name: 'rotation', class: 'splathost-hint' }),
  background: h('input', { name: 'background', type: 'color', value: DEFAULT_BACKGROUND }),
  exposure: h('input', { name: 'exposure', type: 'range', min: '-10', max: '10', step: '0.1', value: '0' }),
  exposureValue: h('output', { name: 'exposure-value', class: 'splathost-hint' }, '0.0'),
  toneMapping: h('select', { name: 'toneMapping' }),
  addAnnotation: h('button', { type: 'button', 'data-action': 'add-annotation' }, 'Add annotation'),
  annotations: h('ol', { class: 'splathost-annotations' }),
  audioFile: h('input', { type: 'file', name: 'audio-file', accept: '.mp3,.ogg,audio/mpeg,audio/ogg' }),
  audioInfo: h('div', { class: 'splathost-hint', 'data-audio': 'info' }),
  audioLoop: h('input', { name: 'audioLoop', type: 'checkbox' }),
  audioVolume: h('input', { name: 'audioVolume', type: 'range', min: '0', max: '1', step: '0.05', value: '1' }),
  audioPreview: h('audio', { controls: '', preload: 'none' }),
  removeAudio: h('button', { type: 'button', 'data-action': 'remove-audio' }, 'Remove audio'),
  save: h('button', { type: 'button', 'data-action': 'save' }, 'Save'),
  publish: h('button', { type: 'button', 'data-action': 'publish' }, 'Publish'),
  duplicate: h('button', { type: 'button', 'data-action': 'duplicate' }, 'Duplicate'),
  status: h('div', { class: 'splathost-status', role: 'status', 'aria-live': 'polite' }),
};
for (const v of ['private', 'public']) ui.visibility.append(h('option', { value: v }, v === 'private' ? 'Private' : 'Public'));
const TONE_NAMES: Record<ToneMapping, string> = { linear: 'Linear', aces: 'ACES', neutral: 'Neutral' };
for (const t of TONE_MAPPINGS) ui.toneMapping.append(h('option', { value: t }, TONE_NAMES[t]));
const audioControls = h('div', { class: 'splathost-audio', hidden: '' });
{
  const panel = h('form', { class: 'splathost-panel', 'aria-label': 'Scene settings' });
  panel.addEventListener('submit', (e) => e.preventDefault());
  const actions = h('div', { class: 'splathost-actions' });
  actions.append(ui.save, ui.publish, ui.duplicate);
  // Save and the status line stay in reach however far the panel is scrolled.
  const footer = h('div', { class: 'splathost-footer' });
  footer.append(actions, ui.status);
  const row = (...els: HTMLElement[]) => {
    const d = h('div', { class: 'splathost-row' });
    d.append(...els);
    return d;
  };
  const exposure = field('Exposure', ui.exposure);
  exposure.append(ui.exposureValue);
  audioControls.append(ui.audioInfo, toggle('Loop', ui.audioLoop), field('Volume', ui.audioVolume), ui.audioPreview, ui.removeAudio);
  panel.append(
    ui.presence,
    section('scene', 'Scene',
      field('Title', ui.title),
      field('Description', ui.description),
      field('Visibility', ui.visibility),
      toggle('Allow comments', ui.allowComments),
      toggle('Allow reactions', ui.allowReactions),
      field('Scene file (.ply, .splat, .ksplat, .sog)', ui.file)),
    section('view', 'View',
      row(ui.startCamera, ui.goStart),
      row(ui.flip, ui.rotate, ui.rotation),
      field('Background', ui.background),
      exposure,
      field('Tone mapping', ui.toneMapping)),
    section('annotations', 'Annotations', ui.addAnnotation, ui.annotations),
    section('audio', 'Audio', field('Audio file (.mp3, .ogg)', ui.audioFile), audioControls),
    footer,
  );
  layout.append(panel);
}

function say(message: string, tone: 'info' | 'error' = 'info'): void {
  ui.status.textContent = message;
  ui.status.dataset.tone = tone;
}

// ---- editor state ------------------------------------------------------------------------

/** The open scene as last loaded or saved (null on a blank canvas), a picked file not yet
 * uploaded, and the levelData being edited (v1; what Save writes). */
let current: Splat | null = null;
let pendingFile: File | null = null;
let level: LevelV1 = readLevel(null);
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

/** Whether there is a scene to edit (an open one or a picked file) that this session may change. */
const editing = () => !!(current || pendingFile) && !isReadOnly();

function fill(splat: Splat | null): void {
  ui.title.value = splat?.title ?? '';
  ui.description.value = splat?.description ?? '';
  ui.visibility.value = splat?.visibility ?? 'private';
  // A new scene starts with both allowed, as a commit makes it (contract item 6).
  ui.allowComments.checked = splat ? splat.allowComments !== false : true;
  ui.allowReactions.checked = splat ? splat.allowReactions !== false : true;
  ui.file.value = '';
  document.documentElement.dataset.splatId = splat?.id ?? '';
}

// ---- the room ----------------------------------------------------------------------------

let room: Room | null = null;
const presence = new Presence(ui.presence, markerLayer, (p) => {
  const at = stage.project(p);
  return at.behind || at.x < 0 || at.y < 0 || at.x > stage.canvas.clientWidth || at.y > stage.canvas.clientHeight ? null : at;
});
// After every frame the engine draws: the markers follow our camera, and the others see where
// we look (an orbit, a flight to an annotation or the start camera alike; the room sends it at
// most 5 times a second).
let sharedView = '';
stage.onFrame(() => {
  presence.update();
  const cam = stage.orbit.get();
  const key = JSON.stringify(cam);
  if (room && key !== sharedView) {
    sharedView = key;
    room.camera(cam);
  }
});

/** Joins the room of the open scene (one room per scene; a new or blank scene has none). */
function joinRoom(splatId: string | null): void {
  if (room?.splatId === splatId) return;
  room?.close();
  room = null;
  presence.clear();
  setReadOnly(false);
  ui.presence.dataset.roomState = 'none';
  if (!splatId) return;
  room = new Room({
    splatId,
    token: () => api.token,
    handlers: {
      welcome(self, peers, draft, _seq, canEdit) {
        presence.reset(self, peers);
        setReadOnly(!canEdit);
        // The room's unsaved changes (someone edited before we came, or while we were away).
        if (Object.keys(draft).length > 0) applyRemote(draft);
      },
      join(peer) {
        presence.join(peer);
        // Cameras are not part of a welcome: the newcomer learns where we look from us.
        sharedView = '';
      },
      leave: (id) => presence.leave(id),
      edit: (_from, fields) => applyRemote(fields),
      camera: (from, cam) => presence.camera(from, cam),
      saved: (splat) => adoptSaved(splat as Splat),
      state(state, code) {
        ui.presence.dataset.roomState = state;
        if (state === 'refused') {
          presence.clear();
          console.warn(`splathost editor: the room refused this session (${code})`);
        }
      },
    },
  });
  // Our own marker for the others, from where we look now (sent after the welcome).
  sharedView = '';
}

/** Shares a local change with the room and marks the scene dirty. */
function changed(fields: RoomFields): void {
  setDirty(true);
  room?.edit(fields);
}

/** Applies someone else's edit (or the room's draft) to the form and the stage; it is an
 * unsaved change here too. */
function applyRemote(fields: RoomFields): void {
  if (fields.title !== undefined) ui.title.value = fields.title;
  if (fields.description !== undefined) ui.description.value = fields.description;
  if (fields.visibility !== undefined) ui.visibility.value = fields.visibility;
  if (typeof fields.allowComments === 'boolean') ui.allowComments.checked = fields.allowComments;
  if (typeof fields.allowReactions === 'boolean') ui.allowReactions.checked = fields.allowReactions;
  if (fields.levelData) {
    // A key sent as null was removed; every other key replaces ours wholesale.
    const next: Record<string, unknown> = { ...level };
    for (const [k, v] of Object.entries(fields.levelData)) {
      if (v === null) delete next[k];
      else next[k] = v;
    }
    level = readLevel(next);
    // The start camera changes with everyone's edits; our own view stays where we put it.
    applyLevel(Object.keys(fields.levelData));
  }
  setDirty(true);
}

/** The server stored someone's save or publish: that scene is the one now, nothing is unsaved. */
function adoptSaved(splat: Splat): void {
  if (!current || splat.id !== current.id || !isNewerSave(splat, current)) return;
  if ((splat as { levelData?: unknown }).levelData === undefined) {
    // Too large for the room's frame: the saver sent the scene without it; read it back.
    void api.splat(splat.id).then(adoptSaved, (err) => console.warn('splathost editor: could not read the saved scene', err));
    return;
  }
  current = { ...current, ...splat };
  fill(current);
  level = readLevel(current.levelData);
  applyLevel();
  setDirty(false);
}

// ---- levelData: the stage and the panel ----------------------------------------------------

/** Makes the stage and the panel show `level` (only the keys given, or all of them). */
function applyLevel(keys?: string[]): void {
  const has = (k: string) => !keys || keys.includes(k);
  if (has('orientation')) {
    stage.setOrientation(rotationOf(level));
    ui.rotation.value = rotationOf(level).map((n) => `${n}°`).join(' ');
  }
  if (has('background') || has('post')) {
    stage.setLook({
      background: level.background?.color ?? DEFAULT_BACKGROUND,
      exposure: level.post?.exposure ?? 0,
      toneMapping: level.post?.toneMapping ?? 'linear',
    });
    ui.background.value = level.background?.color ?? DEFAULT_BACKGROUND;
    ui.exposure.value = String(level.post?.exposure ?? 0);
    ui.exposureValue.value = (level.post?.exposure ?? 0).toFixed(1);
    ui.toneMapping.value = level.post?.toneMapping ?? 'linear';
  }
  if (has('annotations')) renderAnnotations();
  if (has('audio')) renderAudio();
}

/** Sets (or with undefined removes) one top-level levelData key as a local edit. */
function setLevelKey<K extends keyof LevelV1 & string>(key: K, value: LevelV1[K] | undefined): void {
  const next: Record<string, unknown> = { ...level };
  if (value === undefined) delete next[key];
  else next[key] = value;
  level = readLevel(next);
  applyLevel([key]);
  changed({ levelData: { [key]: value ?? null } });
}

ui.title.addEventListener('input', () => changed({ title: ui.title.value }));
ui.description.addEventListener('input', () => changed({ description: ui.description.value }));
ui.visibility.addEventListener('change', () => changed({ visibility: ui.visibility.value as Visibility }));
ui.allowComments.addEventListener('change', () => changed({ allowComments: ui.allowComments.checked }));
ui.allowReactions.addEventListener('change', () => changed({ allowReactions: ui.allowReactions.checked }));

// Orbiting moves the start camera, as the editor always did: what you look at when you save is
// what visitors first see. The others see it as an unsaved change (their own views stay put)
// and see our marker move.
stage.orbit.onChange = () => {
  if (!editing()) return;
  const cam = stage.orbit.get();
  level = { ...level, camera: cam };
  changed({ levelData: { camera: cam } });
};

ui.startCamera.addEventListener('click', () => {
  if (!editing()) return;
  setLevelKey('camera', stage.orbit.get());
  say('The start camera is this view.');
});
ui.goStart.addEventListener('click', () => {
  if (level.camera) void stage.flyTo(level.camera);
});

const turn = (deg: number) => ((deg % 360) + 360) % 360;
ui.flip.addEventListener('click', () => {
  if (!editing()) return;
  const [x, y, z] = rotationOf(level);
  setLevelKey('orientation', { rotation: [turn(x + 180), y, z] });
});
ui.rotate.addEventListener('click', () => {
  if (!editing()) return;
  const [x, y, z] = rotationOf(level);
  setLevelKey('orientation', { rotation: [x, turn(y + 90), z] });
});
ui.background.addEventListener('input', () => {
  if (editing()) setLevelKey('background', { color: ui.background.value.toLowerCase() });
});
const setPost = () => {
  if (!editing()) return;
  ui.exposureValue.value = Number(ui.exposure.value).toFixed(1);
  setLevelKey('post', { exposure: Number(ui.exposure.value), toneMapping: ui.toneMapping.value as ToneMapping });
};
ui.exposure.addEventListener('input', setPost);
ui.toneMapping.addEventListener('change', setPost);

// ---- annotations -------------------------------------------------------------------------

// The viewer's hotspots, on the view: selecting one (its marker, its row, a new one) flies the
// camera to it and opens its card, as a visitor will see it.
const hotspots = new Hotspots(stage, view);
hotspots.onSelect = (a) => highlightRow(a?.id ?? null);

/** A fresh annotation id (levelData v1: 1-64 of [A-Za-z0-9_-]). */
function annotationId(): string {
  return 'a' + crypto.randomUUID().replace(/-/g, '').slice(0, 12);
}

function annotations(): Annotation[] {
  return level.annotations ?? [];
}

function setAnnotations(list: Annotation[]): void {
  setLevelKey('annotations', list);
}

function updateAnnotation(id: string, patch: Partial<Annotation>): void {
  setAnnotations(annotations().map((a) => (a.id === id ? { ...a, ...patch } : a)));
}

/** Marks the row of the selected annotation (the hotspots hold the selection). */
function highlightRow(id: string | null): void {
  for (const li of ui.annotations.querySelectorAll<HTMLElement>('[data-annotation-row]')) {
    const on = li.dataset.annotationRow === id;
    li.toggleAttribute('data-selected', on);
    if (on) li.scrollIntoView({ block: 'nearest' });
  }
}

/** Selects an annotation as its hotspot would (the camera flies there), unless it is already. */
function selectAnnotation(id: string): void {
  if (hotspots.selectedId !== id) hotspots.select(id);
}

/**
 * The annotation list. It is rebuilt only when its set or order changes; otherwise each row's
 * fields are updated in place, except the one being typed in (a remote edit of the same field
 * lands when its author stops, as the last writer wins on save anyway).
 */
function renderAnnotations(): void {
  const list = annotations();
  hotspots.set(list);
  const rows = [...ui.annotations.querySelectorAll<HTMLElement>('[data-annotation-row]')];
  const sameSet = rows.length === list.length && rows.every((r, i) => r.dataset.annotationRow === list[i].id);
  if (!sameSet) ui.annotations.replaceChildren(...list.map(annotationRow));
  for (const a of list) {
    const li = ui.annotations.querySelector<HTMLElement>(`[data-annotation-row="${a.id}"]`);
    if (!li) continue;
    const title = li.querySelector<HTMLInputElement>('input[name=annotation-title]')!;
    const text = li.querySelector<HTMLTextAreaElement>('textarea[name=annotation-text]')!;
    if (document.activeElement !== title && title.value !== a.title) title.value = a.title;
    if (document.activeElement !== text && text.value !== a.text) text.value = a.text;
    li.toggleAttribute('data-has-camera', !!a.camera);
  }
  highlightRow(hotspots.selectedId);
}

function annotationRow(a: Annotation): HTMLElement {
  const li = h('li', { 'data-annotation-row': a.id });
  const title = h('input', { name: 'annotation-title', type: 'text', maxlength: '120', 'aria-label': 'Annotation title' });
  title.value = a.title;
  const text = h('textarea', { name: 'annotation-text', maxlength: '2000', rows: '2', 'aria-label': 'Annotation text' });
  text.value = a.text;
  const go = h('button', { type: 'button', 'data-action': 'go-annotation', title: 'Look from this annotation\'s view' }, 'Go');
  const view = h('button', { type: 'button', 'data-action': 'annotation-view', title: 'Show this annotation from the current view' }, 'Use current view');
  const del = h('button', { type: 'button', 'data-action': 'delete-annotation' }, 'Delete');
  title.addEventListener('focus', () => selectAnnotation(a.id));
  text.addEventListener('focus', () => selectAnnotation(a.id));
  // An empty title is not a valid annotation: it is kept as typed, and saved once it has one.
  title.addEventListener('input', () => {
    if (title.value.trim()) updateAnnotation(a.id, { title: title.value });
  });
  text.addEventListener('input', () => updateAnnotation(a.id, { text: text.value }));
  go.addEventListener('click', () => hotspots.select(a.id));
  view.addEventListener('click', () => {
    updateAnnotation(a.id, { camera: stage.orbit.get() });
    say('The annotation shows from this view.');
  });
  del.addEventListener('click', () => setAnnotations(annotations().filter((x) => x.id !== a.id)));
  const buttons = h('div', { class: 'splathost-row' });
  buttons.append(go, view, del);
  li.append(title, text, buttons);
  return li;
}

/** Placing: the next click (not a drag) in the view puts a new annotation there. */
let placing = false;

function setPlacing(on: boolean): void {
  placing = on;
  document.documentElement.toggleAttribute('data-placing', on);
  ui.addAnnotation.setAttribute('aria-pressed', String(on));
  if (on) say('Click in the scene where the annotation goes (Esc cancels).');
}

ui.addAnnotation.addEventListener('click', () => {
  if (!editing()) {
    say('Open or pick a scene first.', 'error');
    return;
  }
  if (annotations().length >= MAX_ANNOTATIONS) {
    say(`A scene has at most ${MAX_ANNOTATIONS} annotations.`, 'error');
    return;
  }
  setPlacing(!placing);
});
window.addEventListener('keydown', (e) => {
  if (e.key === 'Escape' && placing) {
    setPlacing(false);
    say('');
  }
});
{
  // The canvas is replaced for every engine: listen on the view, which holds it.
  let down: { x: number; y: number } | null = null;
  view.addEventListener('pointerdown', (e) => {
    down = e.target === stage.canvas ? { x: e.clientX, y: e.clientY } : null;
  }, true);
  view.addEventListener('pointerup', (e) => {
    const start = down;
    down = null;
    if (!placing || !start || Math.hypot(e.clientX - start.x, e.clientY - start.y) > 4) return;
    const rect = stage.canvas.getBoundingClientRect();
    const position = stage.pointAt(e.clientX - rect.left, e.clientY - rect.top);
    const round = (n: number) => Math.round(n * 1e5) / 1e5;
    const a: Annotation = {
      id: annotationId(),
      position: position.map(round) as Vec3,
      title: `Annotation ${annotations().length + 1}`,
      text: '',
      // Shown from where it was placed, until 'Use current view' says otherwise.
      camera: stage.orbit.get(),
    };
    setPlacing(false);
    setAnnotations([...annotations(), a]);
    hotspots.select(a.id);
    say('Annotation added: give it a title and a text.');
    ui.annotations.querySelector<HTMLInputElement>(`[data-annotation-row="${a.id}"] input[name=annotation-title]`)?.select();
  }, true);
}

// ---- audio -------------------------------------------------------------------------------

/** The audio upload route's bound (20 MB). */
const MAX_AUDIO_BYTES = 20_000_000;
/** A local copy of an audio file picked in this page (its store URL is not readable before the
 * scene is saved), for the preview. */
let audioPreviewUrl: string | null = null;

function renderAudio(): void {
  const audio = level.audio;
  audioControls.hidden = !audio;
  if (!audio) {
    ui.audioPreview.removeAttribute('src');
    return;
  }
  ui.audioInfo.textContent = decodeURIComponent(new URL(audio.url, location.href).pathname.split('/').pop() ?? '');
  ui.audioLoop.checked = audio.loop ?? false;
  ui.audioVolume.value = String(audio.volume ?? 1);
  const src = audioPreviewUrl ?? audio.url;
  if (ui.audioPreview.getAttribute('src') !== src) ui.audioPreview.src = src;
  ui.audioPreview.volume = audio.volume ?? 1;
  ui.audioPreview.loop = audio.loop ?? false;
}

function audioType(file: File): 'audio/mpeg' | 'audio/ogg' | null {
  if (file.type === 'audio/mpeg' || /\.mp3$/i.test(file.name)) return 'audio/mpeg';
  if (file.type === 'audio/ogg' || /\.og[ga]$/i.test(file.name)) return 'audio/ogg';
  return null;
}

ui.audioFile.addEventListener('change', () => {
  const file = ui.audioFile.files?.[0];
  ui.audioFile.value = '';
  if (!file) return;
  const contentType = audioType(file);
  if (!contentType) {
    say('Pick an .mp3 or .ogg file.', 'error');
    return;
  }
  if (file.size < 1 || file.size > MAX_AUDIO_BYTES) {
    say('An audio file may be at most 20 MB.', 'error');
    return;
  }
  if (!editing()) {
    say('Open or pick a scene first.', 'error');
    return;
  }
  action('upload', async () => {
    const { body: up } = await api.call('POST', '/api/embed/editor/uploads/audio', { fileName: file.name, contentType, fileSize: file.size });
    say('Uploading the audio…');
    await putSigned(up.uploadUrl, file, contentType);
    if (audioPreviewUrl) URL.revokeObjectURL(audioPreviewUrl);
    audioPreviewUrl = URL.createObjectURL(file);
    setLevelKey('audio', { url: up.fileUrl, loop: level.audio?.loop ?? true, volume: level.audio?.volume ?? 1 });
    say('Audio added: Save keeps it with the scene.');
  });
});
ui.audioLoop.addEventListener('change', () => {
  if (level.audio) setLevelKey('audio', { ...level.audio, loop: ui.audioLoop.checked });
});
ui.audioVolume.addEventListener('input', () => {
  if (level.audio) setLevelKey('audio', { ...level.audio, volume: Number(ui.audioVolume.value) });
});
ui.removeAudio.addEventListener('click', () => {
  ui.audioPreview.pause();
  setLevelKey('audio', undefined);
});

// ---- opening scenes ----------------------------------------------------------------------

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

/** A new levelData to edit: the panel and the stage follow it. */
function resetLevel(raw: unknown): void {
  level = readLevel(raw);
  hotspots.select(null);
  if (audioPreviewUrl) URL.revokeObjectURL(audioPreviewUrl);
  audioPreviewUrl = null;
  setPlacing(false);
  applyLevel();
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
  resetLevel(splat.levelData);
  say('');
  setDirty(false);
  joinRoom(splat.id);
  const ok = await show(() => stage.show(sourceOfSplat(splat), cameraFromLevelData(splat.levelData), level));
  if (ok) room?.camera(stage.orbit.get());
  if (ok && announce) post('projectLoaded', { splatId: splat.id });
  return ok;
}

function createProject(): void {
  stage.clear();
  current = null;
  pendingFile = null;
  fill(null);
  resetLevel(null);
  joinRoom(null);
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
  // A picked file starts a new scene (it is uploaded on save), alone until it is saved.
  current = null;
  pendingFile = file;
  joinRoom(null);
  resetLevel(null);
  document.documentElement.dataset.splatId = '';
  if (!ui.title.value.trim()) ui.title.value = file.name.replace(/\.[^.]+$/, '');
  setDirty(true);
  void show(() => stage.show({ format, file }, null, level));
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

/** The levelData Save writes: the edited one, with the current view as start camera when the
 * scene has none yet (a saved scene always opens where its editor looked). */
function levelData(): LevelV1 {
  return level.camera ? level : { ...level, camera: stage.orbit.get() };
}

/** The scene settings Save (and Publish) write, as the form shows them. */
function settings(title: string) {
  return {
    title, description: ui.description.value,
    allowComments: ui.allowComments.checked, allowReactions: ui.allowReactions.checked,
  };
}

const CONTENT_TYPES: Record<string, string> = {
  ply: 'application/ply', splat: 'application/splat', ksplat: 'application/ksplat', sog: 'application/sog',
};

/** PUTs body to a signed upload URL with exactly the headers it was signed with (the store
 * refuses anything else; the browser sets Content-Length from the body). */
async function putSigned(url: string, body: Blob, contentType: string): Promise<void> {
  const put = await fetch(url, {
    method: 'PUT', body,
    headers: { 'Content-Type': contentType, 'Cache-Control': 'public, max-age=31536000, immutable' },
  });
  if (!put.ok) throw new Error(`the upload failed (${put.status})`);
}

/** The canvas as a thumbnail: WebP where the browser encodes it, else JPEG, at most 1024 px
 * wide; null when no scene is drawn. The engines keep their drawing buffer, so the canvas can
 * be read between frames. */
async function captureThumbnail(): Promise<Blob | null> {
  if (document.documentElement.dataset.splathost !== 'rendered') return null;
  const src = stage.canvas;
  if (!src.width || !src.height) return null;
  const scale = Math.min(1, 1024 / src.width);
  const c = document.createElement('canvas');
  c.width = Math.max(1, Math.round(src.width * scale));
  c.height = Math.max(1, Math.round(src.height * scale));
  const g = c.getContext('2d');
  if (!g) return null;
  g.drawImage(src, 0, 0, c.width, c.height);
  const encode = (type: string) => new Promise<Blob | null>((resolve) => c.toBlob(resolve, type, 0.85));
  const webp = await encode('image/webp');
  // A browser without a WebP encoder answers PNG: take JPEG instead.
  return webp?.type === 'image/webp' ? webp : encode('image/jpeg');
}

/** Uploads a thumbnail of the canvas through the splat-images route; its fileUrl, or null when
 * there is nothing to capture. A failure is the caller's to judge (a thumbnail never blocks a
 * save). */
async function uploadThumbnail(): Promise<string | null> {
  const blob = await captureThumbnail();
  if (!blob) return null;
  const { body } = await api.call('POST', '/api/embed/editor/uploads/splat-images', {
    thumbnail: { contentType: blob.type, fileSize: blob.size },
  });
  await putSigned(body.thumbnail.uploadUrl, blob, blob.type);
  return body.thumbnail.fileUrl as string;
}

/** Uploads the picked file and commits it as a new scene; returns the new scene, with the allow
 * toggles (which a commit does not take: it starts a scene with both on) and its thumbnail. */
async function commitNew(file: File, title: string): Promise<Splat> {
  const contentType = CONTENT_TYPES[formatOfName(file.name) ?? ''] ?? 'application/octet-stream';
  const { body: up } = await api.call('POST', '/api/embed/editor/uploads/splat-file', { fileName: file.name, contentType, fileSize: file.size });
  say('Uploading…');
  await putSigned(up.uploadUrl, file, contentType);
  const { body } = await api.call('POST', '/api/embed/editor/splats', {
    title, description: ui.description.value, visibility: ui.visibility.value as Visibility,
    splatType: 'file', splatUrl: up.fileUrl, levelData: levelData(),
  });
  return patchScene(await api.splat(body.splatId), {
    allowComments: ui.allowComments.checked, allowReactions: ui.allowReactions.checked,
  });
}

/** A PATCH, sent again once when the server answers 409: another participant's save changed
 * the scene's stored objects while this one was planned, and the server asks to save again. */
async function patchOnce(path: string, body: Record<string, unknown>): Promise<{ status: number; body: any }> {
  try {
    return await api.call('PATCH', path, body);
  } catch (err) {
    if (!(err instanceof ApiError && err.status === 409)) throw err;
    await sleep(250);
    return api.call('PATCH', path, body);
  }
}

/** PATCHes scene with body; the answer is the scene now (savedAs). A first save without an image
 * attaches a canvas thumbnail by a second PATCH that changes nothing else (others' edits stay unsaved). */
async function patchScene(scene: Splat, body: Record<string, unknown>): Promise<Splat> {
  const path = `/api/embed/editor/splats/${scene.id}`;
  const { body: res } = await patchOnce(path, body);
  let splat: Splat = { ...scene, ...res.splat };
  savedAs(splat);
  if (!splat.imageUrl) {
    try {
      const imageUrl = await uploadThumbnail();
      if (imageUrl) {
        const { body: { splat: img } } = await patchOnce(path, { imageUrl });
        splat = { ...splat, imageUrl: img.imageUrl, updatedAt: img.updatedAt };
        if (current?.id === scene.id) current = { ...current, imageUrl: img.imageUrl, updatedAt: img.updatedAt };
      }
    } catch (err) {
      console.warn('splathost editor: the thumbnail could not be saved', err);
    }
  }
  return splat;
}

/** The scene as saved is ours now; the server announces it to the room once stored ('saved'). */
function savedAs(splat: Splat): void {
  current = splat;
  level = readLevel(splat.levelData);
  applyLevel();
  setDirty(false);
}

ui.save.addEventListener('click', () => action('save', async () => {
  const title = ui.title.value.trim();
  if (!title) throw new Error('the title must not be empty');
  if (current) {
    await patchScene(current, { ...settings(title), levelData: levelData() });
    say('Saved.');
    post('saved', {});
    return;
  }
  if (!pendingFile) throw new Error('pick a scene file first');
  const splat = await commitNew(pendingFile, title);
  pendingFile = null;
  document.documentElement.dataset.splatId = splat.id;
  savedAs(splat);
  joinRoom(splat.id);
  say('Saved.');
  post('saved', { splatId: splat.id });
}));

ui.publish.addEventListener('click', () => action('publish', async () => {
  if (!current) throw new Error('save the scene before publishing it');
  const title = ui.title.value.trim();
  if (!title) throw new Error('the title must not be empty');
  // The visibility the user picked, or public when they left it as stored. Publishing saves
  // every other change too: the room adopts the published scene, so nothing may stay unsaved.
  const picked = ui.visibility.value as Visibility;
  const visibility: Visibility = picked !== current.visibility ? picked : 'public';
  const splatId = current.id;
  await patchScene(current, { ...settings(title), levelData: levelData(), visibility });
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
  applyLevel();
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
