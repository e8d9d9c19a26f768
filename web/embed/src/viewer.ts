// The viewer embed (/embed/viewer): shows the session's scene as its levelData v1 describes it
// (orientation, start camera, annotations as hotspots, background, exposure and tone mapping,
// optional audio), counts one view per load, offers a like button where the owner allows
// reactions, and takes camera commands from its host page (docs/embeds.md, "Viewer control API").
import {
  HOST_SOURCE, VIEWER_SOURCE, type ViewerCommand, type ViewerEventMap, type ViewerEventName,
} from '../../sdk/src/protocol.ts';
import { Api, type Splat, readBoot, sendView, visitorId } from './api.ts';
import { hostOrigin as hostOriginOf } from './host.ts';
import { Hotspots } from './hotspots.ts';
import { type LevelV1, readCamera, readLevel } from './level.ts';
import { sourceOfSplat } from './engine.ts';
import { Stage, setStatus, showError } from './stage.ts';

const params = new URLSearchParams(location.search);

// ---- messages to and from the host -------------------------------------------------------

/** Where events go and host commands come from (null: nowhere; the console says why). Only a
 * framed viewer has a host. */
const hostOrigin: string | null = window.parent === window ? null : hostOriginOf('viewer', params);

function post<K extends ViewerEventName>(type: K, payload: ViewerEventMap[K]): void {
  if (hostOrigin) window.parent.postMessage({ source: VIEWER_SOURCE, type, payload }, hostOrigin);
}

// ---- controls ----------------------------------------------------------------------------

function button(action: string, label: string): HTMLButtonElement {
  const b = document.createElement('button');
  b.type = 'button';
  b.dataset.action = action;
  b.setAttribute('aria-label', label);
  b.title = label;
  b.setAttribute('aria-pressed', 'false');
  return b;
}

let controls: HTMLDivElement | null = null;

/** The control bar (styled by embed.css: the page's policy allows no inline style). */
function controlBar(): HTMLDivElement {
  if (!controls) {
    controls = document.createElement('div');
    controls.className = 'splathost-controls';
    document.body.append(controls);
  }
  return controls;
}

/** The optional background audio: an <audio> element that stays paused and muted until the
 * visitor presses the sound button (browsers refuse sound before a gesture anyway, and a scene
 * should not start talking on its own). Loop and volume as levelData says. */
function mountAudio(audio: NonNullable<LevelV1['audio']>): void {
  const el = document.createElement('audio');
  el.src = audio.url;
  el.loop = audio.loop ?? false;
  el.volume = audio.volume ?? 1;
  el.muted = true;
  el.preload = 'none';
  el.dataset.splathostAudio = '';
  document.body.append(el);
  const b = button('sound', 'Sound');
  const render = () => {
    const on = !el.paused && !el.muted;
    b.setAttribute('aria-pressed', String(on));
    b.textContent = on ? '🔊' : '🔇';
    b.setAttribute('aria-label', on ? 'Mute sound' : 'Play sound');
    b.title = b.getAttribute('aria-label')!;
  };
  b.addEventListener('click', () => {
    if (el.paused || el.muted) {
      el.muted = false;
      el.play().catch((err) => {
        console.warn('splathost viewer: the audio does not play:', err);
        el.muted = true;
        render();
      });
    } else {
      el.muted = true;
      el.pause();
    }
    render();
  });
  el.addEventListener('play', render);
  el.addEventListener('pause', render);
  el.addEventListener('ended', render);
  render();
  controlBar().append(b);
}

const LIKED_KEY = 'splathost.liked.';

function readLiked(splatId: string): boolean {
  try {
    return localStorage.getItem(LIKED_KEY + splatId) === '1';
  } catch {
    return false;
  }
}

function writeLiked(splatId: string, liked: boolean): void {
  try {
    if (liked) localStorage.setItem(LIKED_KEY + splatId, '1');
    else localStorage.removeItem(LIKED_KEY + splatId);
  } catch {
    // Storage blocked (a third-party frame): the state lasts for this page only.
  }
}

/** The like button (only where the owner allows reactions): POST like / DELETE unlike with the
 * visitor id, the count shown being the server's answer. The visitor's own state is kept in
 * localStorage, since the scene answer does not say whether this visitor liked it. */
function mountLike(api: Api, splat: Splat): void {
  const b = button('like', 'Like');
  const heart = document.createElement('span');
  heart.className = 'splathost-heart';
  heart.textContent = '♥';
  const count = document.createElement('span');
  count.dataset.likeCount = '';
  b.append(heart, count);
  let liked = readLiked(splat.id);
  let likes = typeof splat.likeCount === 'number' ? splat.likeCount : 0;
  const render = () => {
    b.setAttribute('aria-pressed', String(liked));
    b.setAttribute('aria-label', liked ? 'Unlike' : 'Like');
    b.title = b.getAttribute('aria-label')!;
    count.textContent = String(likes);
  };
  b.addEventListener('click', async () => {
    b.disabled = true;
    const want = !liked;
    try {
      const { body } = await api.call(want ? 'POST' : 'DELETE', `/api/embed/splats/${encodeURIComponent(splat.id)}/like`, { visitorId: visitorId() });
      liked = want;
      if (typeof body.likeCount === 'number') likes = body.likeCount;
      writeLiked(splat.id, liked);
    } catch (err) {
      console.warn('splathost viewer: the like did not go through:', err);
    } finally {
      b.disabled = false;
      render();
    }
  });
  render();
  controlBar().append(b);
}

// ---- start -------------------------------------------------------------------------------

async function main(): Promise<void> {
  setStatus('loading');
  const boot = readBoot();
  if (!boot.splatId) throw new Error('this viewer session names no scene');
  const api = new Api(boot.sessionToken);
  const stage = new Stage(document.body);
  stage.onMilestone((name, figures) => post(name, figures));
  const splat = await api.splat(boot.splatId);
  document.documentElement.dataset.splatId = splat.id;
  if (splat.title) document.title = splat.title;
  sendView(api, splat.id);
  const level = readLevel(splat.levelData);

  const hotspots = new Hotspots(stage, document.body);
  hotspots.onSelect = (a) => {
    if (a) post('annotation', { id: a.id, title: a.title });
  };
  if (splat.allowReactions === true) mountLike(api, splat);
  if (level.audio) mountAudio(level.audio);

  await stage.show(sourceOfSplat(splat), level.camera ?? null, level);
  hotspots.set(level.annotations ?? []);
  setStatus('rendered');

  window.addEventListener('message', (event: MessageEvent) => {
    if (!hostOrigin || event.source !== window.parent || event.origin !== hostOrigin) return;
    const msg = event.data as ViewerCommand | null;
    if (!msg || typeof msg !== 'object' || msg.source !== HOST_SOURCE) return;
    switch (msg.type) {
      case 'setCamera': {
        const cam = readCamera(msg.payload);
        if (cam) void stage.flyTo(cam);
        else console.warn('splathost viewer: setCamera needs {position, target, fov?}');
        break;
      }
      case 'goToAnnotation':
        if (!hotspots.select(typeof msg.payload?.id === 'string' ? msg.payload.id : '')) {
          console.warn('splathost viewer: goToAnnotation: no annotation', msg.payload?.id);
        }
        break;
    }
  });
  post('ready', null);
}

main().catch((err) => {
  console.error('splathost viewer:', err);
  showError(`This scene could not be shown: ${err instanceof Error ? err.message : String(err)}`);
});
