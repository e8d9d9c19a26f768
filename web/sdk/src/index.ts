/**
 * splathost embed SDK: mounts the viewer or editor embed in an iframe and relays the editor's
 * browser messages (docs/embeds.md). One ES module, also served at /sdk/splathost-embed.js.
 *
 * This file also defines the message protocol; the embed bundles import it from here so both
 * sides share one definition.
 */

/** `source` of every message the editor posts to its host. */
export const EDITOR_SOURCE = 'service-editor';
/** `source` of every message the host posts to the editor. */
export const HOST_SOURCE = 'splathost-host';

export type Visibility = 'private' | 'public';

/** Payload of each editor event (the interface spec's Events table); `null` where it has none. */
export interface EditorEventMap {
  ready: null;
  projectLoaded: { splatId: string };
  projectCreated: null;
  saved: { splatId?: string | null };
  published: { splatId: string; visibility: Visibility };
  cloned: { splatId: string; sourceSplatId: string };
  dirtyChanged: { dirty: boolean };
  authRequired: { action?: string; message?: string };
  sessionExpiring: { expiresAt: string };
  limitReached: {
    dimension: 'storageBytes' | 'splatCount';
    scope: 'customer' | 'account';
    usedBytes: number;
    limitBytes: number;
    requestedBytes?: number;
  };
  error: { message: string };
}

export type EditorEventName = keyof EditorEventMap;

/** Payload of each message the host sends to the editor. */
export interface HostMessageMap {
  openProject: { splatId: string };
  createProject: Record<string, never> | null;
  updateSession: { sessionToken: string };
}

export type HostMessageName = keyof HostMessageMap;

/** The envelope of every message, in both directions. */
export interface Envelope<S extends string, T extends string, P> {
  source: S;
  type: T;
  payload: P;
}

export type EditorMessage = {
  [K in EditorEventName]: Envelope<typeof EDITOR_SOURCE, K, EditorEventMap[K]>;
}[EditorEventName];

export type HostMessage = {
  [K in HostMessageName]: Envelope<typeof HOST_SOURCE, K, HostMessageMap[K]>;
}[HostMessageName];

export const EDITOR_EVENTS: readonly EditorEventName[] = [
  'ready', 'projectLoaded', 'projectCreated', 'saved', 'published', 'cloned', 'dirtyChanged',
  'authRequired', 'sessionExpiring', 'limitReached', 'error',
];

export interface MountOptions {
  /** The gateway's base address, e.g. `https://splats.example.com` (no path needed). */
  baseUrl: string;
  /** A session token minted by the integrator's server (POST /api/editor/embed-sessions). */
  sessionToken: string;
  /** Accessible title of the iframe. */
  title?: string;
}

export interface ViewerHandle {
  readonly iframe: HTMLIFrameElement;
  /** Removes the iframe and stops listening. */
  destroy(): void;
}

export type Handler<K extends EditorEventName> = (payload: EditorEventMap[K]) => void;

export interface EditorHandle extends ViewerHandle {
  /** Subscribes to an editor event; returns the function that unsubscribes. */
  on<K extends EditorEventName>(name: K, handler: Handler<K>): () => void;
  /** Loads an existing scene (the session must see it); then `projectLoaded`. */
  openProject(splatId: string): void;
  /** Clears the editor to a blank canvas; then `projectCreated`. */
  createProject(): void;
  /** Replaces the session, after `authRequired` or `sessionExpiring`. */
  updateSession(sessionToken: string): void;
}

/** The embed's origin and page URL, from baseUrl. */
function embedUrl(kind: 'viewer' | 'editor', o: MountOptions, hostOrigin: string): { origin: string; src: string } {
  if (!o || !o.baseUrl || !o.sessionToken) {
    throw new TypeError('splathost: baseUrl and sessionToken are required');
  }
  const base = new URL(o.baseUrl);
  const url = new URL(`/embed/${kind}`, base);
  url.searchParams.set('session', o.sessionToken);
  if (kind === 'editor') {
    url.searchParams.set('hostOrigin', hostOrigin);
  }
  return { origin: base.origin, src: url.toString() };
}

function createFrame(el: HTMLElement, kind: 'viewer' | 'editor', src: string, title?: string): HTMLIFrameElement {
  const iframe = el.ownerDocument.createElement('iframe');
  iframe.src = src;
  iframe.title = title ?? (kind === 'editor' ? 'Scene editor' : 'Scene viewer');
  // The referrer of the frame's navigation is this host page's URL (the embed's own requests
  // send none: its response says Referrer-Policy: no-referrer). The editor needs the host's
  // origin from it where the browser has no location.ancestorOrigins, to check hostOrigin
  // against (docs/embeds.md); the origin alone is all it gets, never the host page's path. The
  // viewer posts nothing and gets nothing.
  iframe.referrerPolicy = kind === 'editor' ? 'origin' : 'no-referrer';
  iframe.allow = 'fullscreen; xr-spatial-tracking';
  iframe.style.cssText = 'width:100%;height:100%;border:0;display:block';
  el.appendChild(iframe);
  return iframe;
}

function hostOriginOf(el: HTMLElement): string {
  const win = el.ownerDocument.defaultView;
  if (!win) {
    throw new TypeError('splathost: the mount element is not in a window');
  }
  return win.location.origin;
}

/** Mounts the viewer embed into el (the iframe fills it). */
export function mountViewer(el: HTMLElement, options: MountOptions): ViewerHandle {
  const { src } = embedUrl('viewer', options, hostOriginOf(el));
  const iframe = createFrame(el, 'viewer', src, options.title);
  return {
    iframe,
    destroy() {
      iframe.remove();
    },
  };
}

/** Mounts the editor embed into el and relays its events. */
export function mountEditor(el: HTMLElement, options: MountOptions): EditorHandle {
  const win = el.ownerDocument.defaultView as Window;
  const { origin, src } = embedUrl('editor', options, hostOriginOf(el));
  const iframe = createFrame(el, 'editor', src, options.title);
  const handlers = new Map<EditorEventName, Set<Handler<any>>>();
  // The editor's page cannot receive anything before it has loaded (a message to the iframe's
  // initial blank document is dropped), so commands wait for its `ready`.
  let ready = false;
  let queue: HostMessage[] = [];
  let destroyed = false;

  const send = (msg: HostMessage) => {
    if (destroyed) return;
    if (!ready) {
      queue.push(msg);
      return;
    }
    iframe.contentWindow?.postMessage(msg, origin);
  };

  const onMessage = (event: MessageEvent) => {
    // Only this embed's window, from the embed's origin, speaking the editor protocol.
    if (event.origin !== origin || event.source == null || event.source !== iframe.contentWindow) return;
    const data = event.data as Partial<EditorMessage> | null;
    if (!data || typeof data !== 'object' || data.source !== EDITOR_SOURCE || typeof data.type !== 'string') return;
    if (data.type === 'ready' && !ready) {
      ready = true;
      const pending = queue;
      queue = [];
      pending.forEach(send);
    }
    const set = handlers.get(data.type as EditorEventName);
    if (!set) return;
    for (const h of [...set]) {
      try {
        h(data.payload ?? null);
      } catch (err) {
        // One faulty host handler must not stop the others.
        console.error('splathost: handler for', data.type, 'threw', err);
      }
    }
  };
  win.addEventListener('message', onMessage);

  return {
    iframe,
    on(name, handler) {
      let set = handlers.get(name);
      if (!set) {
        set = new Set();
        handlers.set(name, set);
      }
      set.add(handler);
      return () => {
        set.delete(handler);
      };
    },
    openProject(splatId) {
      send({ source: HOST_SOURCE, type: 'openProject', payload: { splatId } });
    },
    createProject() {
      send({ source: HOST_SOURCE, type: 'createProject', payload: {} });
    },
    updateSession(sessionToken) {
      send({ source: HOST_SOURCE, type: 'updateSession', payload: { sessionToken } });
    },
    destroy() {
      destroyed = true;
      queue = [];
      handlers.clear();
      win.removeEventListener('message', onMessage);
      iframe.remove();
    },
  };
}
