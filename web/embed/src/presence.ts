// Who else is in the editor's room, as the page shows them (contract item 10): a bar with one
// badge per participant (self included: `[data-presence-peer]`, `data-presence-name`,
// `data-presence-self`), and each other participant's live camera as a small marker in the 3-D
// view, in their colour.
import type { CameraState, Vec3 } from './orbit.ts';
import type { Peer } from './room.ts';

/** Maps a world point to CSS pixels in the view (null when behind the camera or off screen). */
export type Projector = (p: Vec3) => { x: number; y: number } | null;

/** A badge's text without an avatar: the first letters of the first two words ('Ada Lovelace'
 * → 'AL'), a guest's letter and number ('Guest 12' → 'G12'), else the first two characters. */
export function initials(name: string): string {
  const words = name.trim().split(/\s+/).filter(Boolean);
  if (words.length === 0) return '?';
  if (words.length === 2 && /^\d{1,3}$/.test(words[1])) return ([...words[0]][0] + words[1]).toUpperCase();
  const chars = words.length >= 2 ? [...words[0]][0] + [...words[1]][0] : [...words[0]].slice(0, 2).join('');
  return chars.toUpperCase();
}

/** A colour the server sent, or a neutral grey when it is not '#rrggbb' (it goes into CSS). */
function colourOf(peer: Peer): string {
  return /^#[0-9a-fA-F]{6}$/.test(peer.colour) ? peer.colour : '#888888';
}

/** An avatar URL worth loading: http(s) only. */
function avatarOf(peer: Peer): string | null {
  if (!peer.avatarUrl) return null;
  try {
    const u = new URL(peer.avatarUrl);
    return u.protocol === 'https:' || u.protocol === 'http:' ? u.href : null;
  } catch {
    return null;
  }
}

/** The badge of one participant: their avatar, or their initials on their colour. */
function badge(peer: Peer, self: boolean): HTMLElement {
  const el = document.createElement('div');
  el.className = 'splathost-peer';
  el.dataset.presencePeer = peer.id;
  el.dataset.presenceName = peer.name;
  if (self) el.dataset.presenceSelf = '';
  if (peer.guest) el.dataset.presenceGuest = '';
  el.title = self ? `${peer.name} (you)` : peer.name;
  el.setAttribute('role', 'listitem');
  el.setAttribute('aria-label', el.title);
  el.style.setProperty('--peer', colourOf(peer));
  const letters = document.createElement('span');
  letters.className = 'splathost-peer-initials';
  letters.textContent = initials(peer.name);
  letters.setAttribute('aria-hidden', 'true');
  const url = avatarOf(peer);
  if (url) {
    const img = document.createElement('img');
    img.alt = '';
    img.src = url;
    img.referrerPolicy = 'no-referrer';
    // A broken avatar falls back to the initials.
    img.addEventListener('error', () => img.replaceWith(letters));
    el.append(img);
  } else {
    el.append(letters);
  }
  return el;
}

/**
 * The room's roster in the page. The bar lists participants in the order they came, self first;
 * markers follow the others' cameras while the page draws (the owner calls update() after every
 * frame).
 */
export class Presence {
  private peers = new Map<string, Peer>();
  private cameras = new Map<string, CameraState>();
  private markers = new Map<string, HTMLElement>();
  private selfId: string | null = null;

  constructor(
    private readonly bar: HTMLElement,
    private readonly layer: HTMLElement,
    private readonly project: Projector,
  ) {
    bar.setAttribute('role', 'list');
    bar.setAttribute('aria-label', 'People in this scene');
  }

  /** The whole roster, from a welcome. */
  reset(self: Peer, peers: Peer[]): void {
    this.selfId = self.id;
    const known = new Map(peers.map((p) => [p.id, p]));
    known.set(self.id, self);
    this.peers = known;
    for (const id of [...this.cameras.keys()]) if (!known.has(id)) this.cameras.delete(id);
    this.render();
  }

  join(peer: Peer): void {
    this.peers.set(peer.id, peer);
    this.render();
  }

  leave(id: string): void {
    this.peers.delete(id);
    this.cameras.delete(id);
    this.render();
  }

  /** Another participant's camera moved. */
  camera(id: string, cam: CameraState): void {
    if (id === this.selfId || !this.peers.has(id)) return;
    this.cameras.set(id, cam);
    this.update();
  }

  /** Nobody (no room: a blank canvas, a new scene, a refused connection). */
  clear(): void {
    this.selfId = null;
    this.peers.clear();
    this.cameras.clear();
    this.render();
  }

  /** Names in the bar's order (tests and hosts). */
  names(): string[] {
    return [...this.bar.querySelectorAll<HTMLElement>('[data-presence-peer]')].map((el) => el.dataset.presenceName ?? '');
  }

  private render(): void {
    const ordered = [...this.peers.values()].sort((a, b) => Number(b.id === this.selfId) - Number(a.id === this.selfId));
    this.bar.replaceChildren(...ordered.map((p) => badge(p, p.id === this.selfId)));
    this.bar.hidden = ordered.length === 0;
    for (const [id, el] of this.markers) {
      if (!this.peers.has(id) || id === this.selfId) {
        el.remove();
        this.markers.delete(id);
      }
    }
    this.update();
  }

  /** Places every marker where its participant's camera is, as seen from ours. */
  update(): void {
    for (const [id, cam] of this.cameras) {
      const peer = this.peers.get(id);
      if (!peer) continue;
      let el = this.markers.get(id);
      if (!el) {
        el = document.createElement('div');
        el.className = 'splathost-peer-marker';
        el.dataset.peerMarker = id;
        el.setAttribute('aria-hidden', 'true');
        this.layer.append(el);
        this.markers.set(id, el);
      }
      el.style.setProperty('--peer', colourOf(peer));
      el.textContent = initials(peer.name);
      el.title = peer.name;
      const at = this.project(cam.position);
      el.hidden = !at;
      if (at) el.style.transform = `translate(${at.x.toFixed(1)}px, ${at.y.toFixed(1)}px)`;
    }
  }
}
