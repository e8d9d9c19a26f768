// The message protocol between a host page and the embeds: each side's `source`, the events and
// commands with their payloads, and the envelope that carries them. The embed bundles import it
// from here, so both sides share one definition.

/** `source` of every message the editor posts to its host. */
export const EDITOR_SOURCE = 'service-editor';
/** `source` of every message the host posts to the editor or the viewer. */
export const HOST_SOURCE = 'splathost-host';
/** `source` of every message the viewer posts to its host. */
export const VIEWER_SOURCE = 'splathost-viewer';

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

/** A camera in the scene's world frame (Y up, scene units; fov vertical, degrees). */
export interface Camera {
  position: [number, number, number];
  target: [number, number, number];
  fov?: number;
}

/** What the page had loaded when a load event fired (docs/embeds.md, "Load events"). */
export interface LoadFigures {
  /** Bytes the embed's page had fetched over the network so far (the page, its scripts and the
   * engine, the scene record and the scene's data), as the browser's Resource Timing API reports
   * them (`transferSize`: compressed, headers included, 0 for what came from a cache). */
  bytes: number;
  /** Milliseconds since the embed's page started to load (its navigation). */
  ms: number;
}

/** Payload of each viewer event. */
export interface ViewerEventMap {
  /** The scene is on screen and the viewer takes commands. */
  ready: null;
  /** The visitor (or goToAnnotation) opened an annotation. */
  annotation: { id: string; title: string };
  /** The whole scene has been drawn once: every splat of a file, or the coarsest level of every
   * part of a streamed (LOD) scene. Fires once, before or after `ready`. */
  firstFrame: LoadFigures;
  /** Every level the current view needs has been loaded and drawn (for a file, the same frame as
   * `firstFrame`). Fires once, after `firstFrame`. */
  fullDetail: LoadFigures;
}

export type ViewerEventName = keyof ViewerEventMap;

/** Payload of each message the host sends to the viewer. */
export interface ViewerCommandMap {
  /** Flies the camera to this view. */
  setCamera: Camera;
  /** Opens an annotation: flies to it and shows its card; then `annotation`. */
  goToAnnotation: { id: string };
}

export type ViewerCommandName = keyof ViewerCommandMap;

/** The envelope of every message, in both directions. */
export interface Envelope<S extends string, T extends string, P> {
  source: S;
  type: T;
  payload: P;
}

/** The union of the envelopes source S sends, one per message of its payload map M. */
type MessageOf<S extends string, M> = {
  [K in keyof M & string]: Envelope<S, K, M[K]>;
}[keyof M & string];

export type EditorMessage = MessageOf<typeof EDITOR_SOURCE, EditorEventMap>;

export type HostMessage = MessageOf<typeof HOST_SOURCE, HostMessageMap>;

export type ViewerMessage = MessageOf<typeof VIEWER_SOURCE, ViewerEventMap>;

export type ViewerCommand = MessageOf<typeof HOST_SOURCE, ViewerCommandMap>;

export const VIEWER_EVENTS: readonly ViewerEventName[] = ['ready', 'annotation', 'firstFrame', 'fullDetail'];

export const EDITOR_EVENTS: readonly EditorEventName[] = [
  'ready', 'projectLoaded', 'projectCreated', 'saved', 'published', 'cloned', 'dirtyChanged',
  'authRequired', 'sessionExpiring', 'limitReached', 'error',
];
