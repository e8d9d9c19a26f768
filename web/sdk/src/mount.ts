// Mounting an embed: the iframe, and the message channel with it (events in, commands out,
// each only with the embed's window at the embed's origin).
import {
  EDITOR_SOURCE, HOST_SOURCE, VIEWER_SOURCE, type EditorEventMap, type EditorEventName, type Envelope,
  type HostMessageMap, type Camera, type ViewerCommandMap, type ViewerEventMap, type ViewerEventName,
} from './protocol.ts';

export interface MountOptions {
  /** The gateway's base address, e.g. `https://splats.example.com` (no path needed). */
  baseUrl: string;
  /** A session token minted by the integrator's server (POST /api/editor/embed-sessions). */
  sessionToken: string;
  /** Accessible title of the iframe. */
  title?: string;
}

/** What both embeds' handles have. */
export interface EmbedHandle {
  readonly iframe: HTMLIFrameElement;
  /** Removes the iframe and stops listening. */
  destroy(): void;
}

export type Handler<K extends EditorEventName> = (payload: EditorEventMap[K]) => void;

export type ViewerHandler<K extends ViewerEventName> = (payload: ViewerEventMap[K]) => void;

/** The mounted viewer. Commands sent before its `ready` wait for it. */
export interface ViewerHandle extends EmbedHandle {
  /** Subscribes to a viewer event; returns the function that unsubscribes. */
  on<K extends ViewerEventName>(name: K, handler: ViewerHandler<K>): () => void;
  /** Flies the camera to a view (world frame, Y up). */
  setCamera(camera: Camera): void;
  /** Opens the annotation with this id; then `annotation`. */
  goToAnnotation(id: string): void;
}

export interface EditorHandle extends EmbedHandle {
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
  url.searchParams.set('hostOrigin', hostOrigin);
  return { origin: base.origin, src: url.toString() };
}

function createFrame(el: HTMLElement, kind: 'viewer' | 'editor', src: string, title?: string): HTMLIFrameElement {
  const iframe = el.ownerDocument.createElement('iframe');
  iframe.src = src;
  iframe.title = title ?? (kind === 'editor' ? 'Scene editor' : 'Scene viewer');
  // The referrer of the frame's navigation is this host page's origin, nothing more (the
  // embed's own requests send none: its response says Referrer-Policy: no-referrer). The embed
  // needs it where the browser has no location.ancestorOrigins, to check hostOrigin against
  // (docs/embeds.md).
  iframe.referrerPolicy = 'origin';
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

/**
 * The message channel with one embed's iframe: events from its window at the embed's origin
 * with the embed's `source` reach the handlers; commands wait for its `ready` (a message to the
 * iframe's initial blank document is dropped) and go to the embed's origin only.
 */
function connect(el: HTMLElement, iframe: HTMLIFrameElement, origin: string, source: string) {
  const win = el.ownerDocument.defaultView as Window;
  const handlers = new Map<string, Set<(payload: any) => void>>();
  let ready = false;
  let queue: unknown[] = [];
  let destroyed = false;

  const send = (msg: unknown) => {
    if (destroyed) return;
    if (!ready) {
      queue.push(msg);
      return;
    }
    iframe.contentWindow?.postMessage(msg, origin);
  };

  const onMessage = (event: MessageEvent) => {
    // Only this embed's window, from the embed's origin, speaking the embed's protocol.
    if (event.origin !== origin || event.source == null || event.source !== iframe.contentWindow) return;
    const data = event.data as { source?: unknown; type?: unknown; payload?: unknown } | null;
    if (!data || typeof data !== 'object' || data.source !== source || typeof data.type !== 'string') return;
    if (data.type === 'ready' && !ready) {
      ready = true;
      const pending = queue;
      queue = [];
      pending.forEach(send);
    }
    const set = handlers.get(data.type);
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
    send,
    on(name: string, handler: (payload: any) => void): () => void {
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
    destroy() {
      destroyed = true;
      queue = [];
      handlers.clear();
      win.removeEventListener('message', onMessage);
      iframe.remove();
    },
  };
}

/** A typed sender of the host's messages of payload map M: it wraps each payload in the host's
 * envelope, so a handle's commands name only their type and payload. */
type HostSend<M> = <K extends keyof M & string>(type: K, payload: M[K]) => void;

/** Mounts one embed's iframe in el and builds its handle H: the iframe, its events and destroy
 * from the message channel, and the commands `commands` makes from a sender of M. */
function mountHandle<H extends EmbedHandle & { on: unknown }, M>(
  el: HTMLElement,
  kind: 'viewer' | 'editor',
  options: MountOptions,
  source: string,
  commands: (send: HostSend<M>) => Omit<H, keyof EmbedHandle | 'on'>,
): H {
  const { origin, src } = embedUrl(kind, options, hostOriginOf(el));
  const iframe = createFrame(el, kind, src, options.title);
  const ch = connect(el, iframe, origin, source);
  const send: HostSend<M> = (type, payload) =>
    ch.send({ source: HOST_SOURCE, type, payload } satisfies Envelope<typeof HOST_SOURCE, typeof type, M[typeof type]>);
  return { ...commands(send), iframe, on: ch.on, destroy: ch.destroy } as unknown as H;
}

/** Mounts the viewer embed into el (the iframe fills it); relays its events and sends it
 * commands. */
export function mountViewer(el: HTMLElement, options: MountOptions): ViewerHandle {
  return mountHandle<ViewerHandle, ViewerCommandMap>(el, 'viewer', options, VIEWER_SOURCE, (send) => ({
    setCamera(camera) {
      send('setCamera', camera);
    },
    goToAnnotation(id) {
      send('goToAnnotation', { id });
    },
  }));
}

/** Mounts the editor embed into el and relays its events. */
export function mountEditor(el: HTMLElement, options: MountOptions): EditorHandle {
  return mountHandle<EditorHandle, HostMessageMap>(el, 'editor', options, EDITOR_SOURCE, (send) => ({
    openProject(splatId) {
      send('openProject', { splatId });
    },
    createProject() {
      send('createProject', {});
    },
    updateSession(sessionToken) {
      send('updateSession', { sessionToken });
    },
  }));
}
