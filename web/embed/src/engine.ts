// What the stage and its engines share: the engine interface, what an engine loads (a scene's
// format and source), and the default clear colour. The engines import this, never stage.ts:
// the stage loads them by dynamic import, and an engine importing its loader back would close a
// cycle.
import type { Bounds, CameraState } from './orbit.ts';
import type { Quat } from './geometry.ts';
import type { ToneMapping } from './level.ts';

export type { Quat };

/** The default clear colour of every engine, and of the page behind the canvas: rgb(32, 32, 36)
 * (levelData.background replaces it). Tests compare canvas pixels against it. */
export const CLEAR_RGB: readonly [number, number, number] = [32, 32, 36];

/** The scene formats the engines load ('lod': a Streamed SOG folder's lod-meta.json). */
export type SceneFormat = 'ply' | 'sog' | 'lod' | 'splat' | 'ksplat';

/** What to load: a URL, or the bytes of a file the user picked (its name tells the format). */
export interface SceneSource {
  format: SceneFormat;
  url?: string;
  file?: File;
}

/** Hooks an engine calls: camera() before each frame, frame() after each one is drawn, and
 * whole() after a frame that drew the whole loaded scene with its sort applied. */
export interface EngineHooks {
  camera(): CameraState;
  frame(): void;
  /** full false: a streamed scene's coarsest level, everywhere; full true: every level the
   * view needs (a file's splats, all of them). Each may come more than once. */
  whole(full: boolean): void;
}

/** A Look with every part resolved, as the engines apply it. */
export interface EngineLook {
  /** The clear colour, 0-255 sRGB. */
  background: readonly [number, number, number];
  /** Linear multiplier (2^stops). */
  exposure: number;
  toneMapping: ToneMapping;
}

/** One rendering engine bound to one canvas. */
export interface Engine {
  /** Loads the scene; resolves with its bounds in the scene's own (unrotated) frame once the
   * data is in (frames may lag). */
  load(src: SceneSource): Promise<Bounds>;
  /** Turns the loaded scene about the world origin. */
  setRotation(q: Quat): void;
  setLook(look: EngineLook): void;
  destroy(): void;
}

/** Makes an engine on a canvas (each engine module exports one). */
export type EngineFactory = (canvas: HTMLCanvasElement, hooks: EngineHooks) => Engine;

const FORMATS: Record<string, SceneFormat> = {
  '.ply': 'ply', '.sog': 'sog', '.splat': 'splat', '.ksplat': 'ksplat',
};

/** The format of a file name or URL path by its extension (".compressed.ply" is a .ply). */
export function formatOfName(name: string): SceneFormat | null {
  const m = /(\.[a-z0-9]+)$/i.exec(name.split(/[?#]/)[0]);
  return (m && FORMATS[m[1].toLowerCase()]) || null;
}

/** The format of a scene record: a LOD folder by its splatType, a file by its URL's extension. */
export function formatOfSplat(splat: { splatType: string; splatUrl: string }): SceneFormat {
  if (splat.splatType === 'lod') return 'lod';
  const f = formatOfName(new URL(splat.splatUrl, location.href).pathname);
  if (!f) throw new Error('unsupported scene format: ' + splat.splatUrl);
  return f;
}

/** A scene's rendition (contract item 15), as scene answers carry it. */
export interface Processing {
  state: 'pending' | 'ready' | 'failed' | 'skipped';
  renditionUrl: string | null;
  renditionType: 'sog' | 'lod' | null;
}

/** What to load for a scene record: its rendition once ready (compact SOG, or a Streamed SOG
 * folder), the upload before. Both are the same scene in the same frame, so the levelData
 * camera, orientation and annotations hold for either. */
export function sourceOfSplat(splat: { splatType: string; splatUrl: string; processing?: Processing | null }): SceneSource {
  const p = splat.processing;
  if (p && p.state === 'ready' && p.renditionUrl && (p.renditionType === 'sog' || p.renditionType === 'lod')) {
    return { format: p.renditionType, url: p.renditionUrl };
  }
  return { format: formatOfSplat(splat), url: splat.splatUrl };
}
