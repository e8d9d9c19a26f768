// The multiplayer room client (contract item 10, docs/embeds.md "Multiplayer room"): one
// WebSocket per open scene of an editor session, to GET /api/embed/room on the page's own
// origin. It keeps the connection up (reconnecting with backoff and resyncing from 'welcome'),
// coalesces the editor's edits and camera moves so a busy pointer never trips the server's rate
// bound, and hands every server message to typed handlers. The server is the authority: it says
// in the welcome whether this session may edit (a read-only participant's edits are never sent),
// and it alone announces a save ('saved', once the save is stored). Viewer pages never load it.
import type { CameraState } from './orbit.ts';

/** One participant, as the server describes it (self included). */
export interface Peer {
  /** Opaque, unique in the room for the life of one connection. */
  id: string;
  /** user.name cut to 32 characters, or 'Guest N'. */
  name: string;
  avatarUrl: string | null;
  /** '#rrggbb'. */
  colour: string;
  guest: boolean;
}

/** The fields an edit may carry: scene settings, and levelData's top-level keys (each replaced
 * wholesale; a key set to null is removed). */
export interface RoomFields {
  title?: string;
  description?: string;
  visibility?: 'private' | 'public';
  allowComments?: boolean;
  allowReactions?: boolean;
  levelData?: Record<string, unknown>;
}

/** Every message the server sends. */
export type ServerMessage =
  | { type: 'welcome'; self: Peer; peers: Peer[]; draft: RoomFields; seq: number; canEdit?: boolean }
  | { type: 'join'; peer: Peer }
  | { type: 'leave'; id: string }
  | { type: 'edit'; from: string; fields: RoomFields; seq: number }
  | { type: 'camera'; from: string; camera: CameraState }
  | { type: 'saved'; splat: Record<string, unknown>; seq: number }
  | { type: 'error'; code: string | number; message: string; issues?: string[] }
  | { type: 'pong' };

/** Where the connection stands; 'refused' is final for this token (a new one reconnects). */
export type RoomState = 'connecting' | 'open' | 'closed' | 'refused';

/** What the room tells its owner. Every handler is optional. */
export interface RoomHandlers {
  /** A (re)connection was admitted: the full roster and the room's unsaved draft. The draft
   * leaves out what this client changed while it was away (that is sent right after). canEdit
   * says whether this session may change the scene (its owner's, or minted with coEdit); when
   * false the room shares presence and camera only, and drops edits. */
  welcome?(self: Peer, peers: Peer[], draft: RoomFields, seq: number, canEdit: boolean): void;
  join?(peer: Peer): void;
  leave?(id: string): void;
  edit?(from: string, fields: RoomFields, seq: number): void;
  camera?(from: string, camera: CameraState): void;
  /** The server stored a save of the scene (anyone's, this editor's too): the scene as stored. */
  saved?(splat: Record<string, unknown>): void;
  /** The server refused one message, or is about to close (code, message, issues naming the
   * fields). */
  error?(code: string | number, message: string, issues: string[]): void;
  /** The connection changed state; code and reason of the close that caused it, if any. */
  state?(state: RoomState, code?: number, reason?: string): void;
}

/** Close codes after which reconnecting with the same token is pointless (docs/embeds.md,
 * "Multiplayer room"): a bad or expired token, a revoked integration, a viewer session or an
 * inactive customer, a foreign or missing scene, a malformed request. */
const FINAL_CODES = new Set([4400, 4401, 4403, 4404, 4410]);

/** The largest frame the server takes (64 KiB); the client keeps under it. */
export const MAX_MESSAGE_BYTES = 64 * 1024;

/** Backoff bounds of the reconnect (contract: 0.5 s .. 10 s, with jitter). */
export const BACKOFF_MIN_MS = 500;
export const BACKOFF_MAX_MS = 10_000;

/** The delay before reconnect attempt n (0-based): doubling from 0.5 s, capped at 10 s, each
 * drawn from [0.75, 1.25] of its nominal value (clamped to the bounds) so clients dropped by
 * one restart do not all come back in the same instant. */
export function backoffDelay(attempt: number, random: () => number = Math.random): number {
  const nominal = Math.min(BACKOFF_MAX_MS, BACKOFF_MIN_MS * 2 ** Math.min(attempt, 10));
  const jittered = nominal * (0.75 + random() * 0.5);
  return Math.round(Math.max(BACKOFF_MIN_MS, Math.min(BACKOFF_MAX_MS, jittered)));
}

/** Merges b into a as the server merges edits: last writer per top-level field, levelData per
 * top-level levelData key. */
export function mergeFields(a: RoomFields, b: RoomFields): RoomFields {
  const out: RoomFields = { ...a, ...b };
  if (a.levelData && b.levelData) out.levelData = { ...a.levelData, ...b.levelData };
  return out;
}

/** fields without the keys (and levelData keys) that `mask` carries. */
export function withoutFields(fields: RoomFields, mask: RoomFields): RoomFields {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(fields)) {
    if (k === 'levelData') continue;
    if (!(k in mask)) out[k] = v;
  }
  if (fields.levelData) {
    const ld: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(fields.levelData)) if (!mask.levelData || !(k in mask.levelData)) ld[k] = v;
    if (Object.keys(ld).length > 0) out.levelData = ld;
  }
  return out as RoomFields;
}

/** Splits an edit into messages that each stay under the server's frame bound: all of it when
 * it fits, else one message per field and per levelData key. A single key larger than the bound
 * cannot travel live (Save still persists it); it is left out and returned in `dropped`. */
export function splitEdit(fields: RoomFields): { messages: string[]; dropped: string[] } {
  const enc = (f: RoomFields) => JSON.stringify({ type: 'edit', fields: f });
  const size = (s: string) => new TextEncoder().encode(s).length;
  const whole = enc(fields);
  if (size(whole) <= MAX_MESSAGE_BYTES) return { messages: [whole], dropped: [] };
  const messages: string[] = [];
  const dropped: string[] = [];
  const parts: [string, RoomFields][] = [];
  for (const [k, v] of Object.entries(fields)) {
    if (k === 'levelData') continue;
    parts.push([k, { [k]: v } as RoomFields]);
  }
  for (const [k, v] of Object.entries(fields.levelData ?? {})) parts.push([`levelData.${k}`, { levelData: { [k]: v } }]);
  for (const [name, part] of parts) {
    const m = enc(part);
    if (size(m) <= MAX_MESSAGE_BYTES) messages.push(m);
    else dropped.push(name);
  }
  return { messages, dropped };
}

/** Options of a room connection. */
export interface RoomOptions {
  splatId: string;
  /** The session token; read at every (re)connect, so a replaced token is used from then on. */
  token: () => string;
  handlers: RoomHandlers;
  /** ws(s)://host of the gateway; the page's own origin by default. */
  origin?: string;
  /** How often edits are flushed at most (ms): keeps a dragged slider or an orbit under the
   * server's 30 messages/s. */
  editIntervalMs?: number;
  /** Camera presence at most this often (ms): 200 = 5/s, as the contract asks. */
  cameraIntervalMs?: number;
  /** A ping this often (ms); a connection silent for three intervals is taken as dead. */
  pingIntervalMs?: number;
}

/**
 * One room connection. Edits and camera moves made while the socket is down are kept (merged)
 * and sent after the next 'welcome'; the welcome's draft is handed over without them, so the
 * local, newer values win as they would have had the connection stayed up.
 */
export class Room {
  private ws: WebSocket | null = null;
  private attempt = 0;
  private retryTimer = 0;
  private pingTimer = 0;
  private editTimer = 0;
  private cameraTimer = 0;
  private lastEditAt = -Infinity;
  private lastCameraAt = -Infinity;
  private lastHeard = 0;
  private pending: RoomFields | null = null;
  private pendingCamera: CameraState | null = null;
  private closed = false;
  private admitted = false;
  /** The participant this connection is, once welcomed. */
  self: Peer | null = null;
  /** Whether the server takes this session's edits (null until the first welcome). */
  canEdit: boolean | null = null;
  state: RoomState = 'closed';

  constructor(private readonly opts: RoomOptions) {
    this.connect();
  }

  /** The splatId this room is for. */
  get splatId(): string {
    return this.opts.splatId;
  }

  /** Sends an edit (coalesced with others made within the flush interval); nothing for a
   * session the server said may not edit. */
  edit(fields: RoomFields): void {
    if (this.closed || this.canEdit === false) return;
    this.pending = this.pending ? mergeFields(this.pending, fields) : { ...fields };
    this.schedule('edit');
  }

  /** Shares this participant's live camera (the marker others see), at most 5 times a second. */
  camera(camera: CameraState): void {
    if (this.closed) return;
    this.pendingCamera = camera;
    this.schedule('camera');
  }

  /** Reconnects now (e.g. with a replaced token after a refusal). */
  reconnect(): void {
    if (this.closed) return;
    this.attempt = 0;
    this.drop();
    this.connect();
  }

  /** Leaves the room for good. */
  close(): void {
    this.closed = true;
    clearTimeout(this.editTimer);
    clearTimeout(this.cameraTimer);
    this.drop();
    this.setState('closed');
  }

  private url(): string {
    const origin = this.opts.origin ?? location.origin.replace(/^http/, 'ws');
    const q = new URLSearchParams({ splatId: this.opts.splatId, session: this.opts.token() });
    return `${origin}/api/embed/room?${q}`;
  }

  private connect(): void {
    clearTimeout(this.retryTimer);
    this.admitted = false;
    this.setState('connecting');
    let ws: WebSocket;
    try {
      ws = new WebSocket(this.url());
    } catch (err) {
      console.warn('splathost room: cannot connect', err);
      this.retry();
      return;
    }
    this.ws = ws;
    ws.onopen = () => {
      this.lastHeard = Date.now();
      this.armPing();
    };
    ws.onmessage = (ev) => {
      this.lastHeard = Date.now();
      if (typeof ev.data !== 'string') return;
      let msg: ServerMessage;
      try {
        msg = JSON.parse(ev.data);
      } catch {
        console.warn('splathost room: a message that is not JSON');
        return;
      }
      this.dispatch(msg);
    };
    ws.onclose = (ev) => {
      if (this.ws !== ws) return;
      this.ws = null;
      clearTimeout(this.pingTimer);
      if (this.closed) return;
      if (FINAL_CODES.has(ev.code)) {
        this.setState('refused', ev.code, ev.reason);
        return;
      }
      this.setState('closed', ev.code, ev.reason);
      this.retry();
    };
  }

  private dispatch(msg: ServerMessage): void {
    const h = this.opts.handlers;
    switch (msg.type) {
      case 'welcome': {
        this.attempt = 0;
        this.admitted = true;
        this.self = msg.self;
        this.canEdit = msg.canEdit !== false;
        // A read-only session's edits would be refused: they are not kept for the server.
        if (!this.canEdit) this.pending = null;
        this.setState('open');
        const draft = this.pending ? withoutFields(msg.draft ?? {}, this.pending) : msg.draft ?? {};
        h.welcome?.(msg.self, msg.peers ?? [], draft, msg.seq, this.canEdit);
        // What changed here while away goes out now, then the camera.
        if (this.pending) this.flushEdit();
        if (this.pendingCamera) this.flushCamera();
        break;
      }
      case 'join':
        h.join?.(msg.peer);
        break;
      case 'leave':
        h.leave?.(msg.id);
        break;
      case 'edit':
        h.edit?.(msg.from, msg.fields ?? {}, msg.seq);
        break;
      case 'camera':
        h.camera?.(msg.from, msg.camera);
        break;
      case 'saved':
        h.saved?.(msg.splat ?? {});
        break;
      case 'error':
        console.warn(`splathost room: ${msg.code}: ${msg.message}`, ...(msg.issues ?? []));
        h.error?.(msg.code, msg.message, msg.issues ?? []);
        break;
      case 'pong':
        break;
    }
  }

  private schedule(kind: 'edit' | 'camera'): void {
    if (!this.admitted) return; // sent after the next welcome
    const interval = kind === 'edit' ? this.opts.editIntervalMs ?? 100 : this.opts.cameraIntervalMs ?? 200;
    const last = kind === 'edit' ? this.lastEditAt : this.lastCameraAt;
    const timer = kind === 'edit' ? this.editTimer : this.cameraTimer;
    if (timer) return; // a flush is already due
    const wait = Math.max(0, last + interval - Date.now());
    const run = () => {
      if (kind === 'edit') {
        this.editTimer = 0;
        this.flushEdit();
      } else {
        this.cameraTimer = 0;
        this.flushCamera();
      }
    };
    if (wait === 0) {
      run();
      return;
    }
    if (kind === 'edit') this.editTimer = setTimeout(run, wait);
    else this.cameraTimer = setTimeout(run, wait);
  }

  private flushEdit(): void {
    if (!this.pending || !this.admitted) return;
    const { messages, dropped } = splitEdit(this.pending);
    if (dropped.length > 0) {
      console.warn(`splathost room: too large to share live (saved with Save): ${dropped.join(', ')}`);
    }
    for (const m of messages) if (!this.send(m)) return; // kept pending for the next welcome
    this.pending = null;
    this.lastEditAt = Date.now();
  }

  private flushCamera(): void {
    if (!this.pendingCamera || !this.admitted) return;
    if (this.send(JSON.stringify({ type: 'camera', camera: this.pendingCamera }))) {
      this.pendingCamera = null;
      this.lastCameraAt = Date.now();
    }
  }

  private send(data: string): boolean {
    if (!this.ws || this.ws.readyState !== WebSocket.OPEN) return false;
    this.ws.send(data);
    return true;
  }

  private armPing(): void {
    clearTimeout(this.pingTimer);
    const every = this.opts.pingIntervalMs ?? 20_000;
    this.pingTimer = setTimeout(() => {
      // A socket that heard nothing for three intervals is dead (a sleeping laptop, a cut
      // network): drop it and reconnect rather than wait for TCP to notice.
      if (Date.now() - this.lastHeard > every * 3) {
        this.drop();
        this.setState('closed');
        this.retry();
        return;
      }
      this.send('{"type":"ping"}');
      this.armPing();
    }, every);
  }

  private retry(): void {
    if (this.closed) return;
    clearTimeout(this.retryTimer);
    const delay = backoffDelay(this.attempt++);
    this.retryTimer = setTimeout(() => this.connect(), delay);
  }

  private drop(): void {
    clearTimeout(this.retryTimer);
    clearTimeout(this.pingTimer);
    this.admitted = false;
    const ws = this.ws;
    this.ws = null;
    if (ws) {
      ws.onopen = ws.onmessage = ws.onclose = null;
      try {
        ws.close(1000);
      } catch {
        /* already closing */
      }
    }
  }

  private setState(state: RoomState, code?: number, reason?: string): void {
    this.state = state;
    this.opts.handlers.state?.(state, code, reason);
  }
}
