// The full-window canvas and its scene: picks the engine for the scene's format, loads it by
// dynamic import (a page pulls only the engine it needs), drives the orbit camera, and tells
// when real frames are on screen.
import { type Bounds, type CameraState, Orbit, frameBounds } from './orbit.ts';

/** Clear colour of every engine, and of the page behind the canvas: rgb(32, 32, 36). Tests
 * compare canvas pixels against it. */
export const CLEAR_RGB: readonly [number, number, number] = [32, 32, 36];

export type SceneFormat = 'ply' | 'sog' | 'lod' | 'splat' | 'ksplat';

/** What to load: a URL, or the bytes of a file the user picked (its name tells the format). */
export interface SceneSource {
  format: SceneFormat;
  url?: string;
  file?: File;
}

/** Hooks an engine calls: camera() before each frame, frame() after each one is drawn. */
export interface EngineHooks {
  camera(): CameraState;
  frame(): void;
}

/** One rendering engine bound to one canvas. */
export interface Engine {
  /** Loads the scene; resolves with its bounds once the data is in (frames may lag). */
  load(src: SceneSource): Promise<Bounds>;
  destroy(): void;
}

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

// PlayCanvas renders .ply, .sog and streamed LOD; only Spark reads .splat and .ksplat.
const engineOf = (f: SceneFormat): 'playcanvas' | 'spark' => (f === 'splat' || f === 'ksplat' ? 'spark' : 'playcanvas');

async function loadEngine(name: 'playcanvas' | 'spark'): Promise<EngineFactory> {
  return name === 'spark' ? (await import('./engine-spark.ts')).createSpark : (await import('./engine-playcanvas.ts')).createPlayCanvas;
}

/** Page status for tests and hosts, on <html data-splathost>. */
export type Status = 'loading' | 'rendered' | 'blank' | 'error';

export function setStatus(s: Status): void {
  document.documentElement.dataset.splathost = s;
}

// A scene counts as on screen when this many sampled pixels differ from the clear colour.
const MIN_LIT_PIXELS = 4;
// A scene that never lights a pixel (a camera looking away) still counts as shown after this.
const RENDER_TIMEOUT_MS = 20000;

export class Stage {
  readonly orbit = new Orbit();
  canvas: HTMLCanvasElement;
  private engine: Engine | null = null;
  private generation = 0;

  constructor(private readonly host: HTMLElement) {
    this.canvas = this.newCanvas(true);
    // Shown by the stylesheet only while <html data-splathost="loading">.
    const spinner = document.createElement('div');
    spinner.className = 'splathost-spinner';
    host.append(spinner);
  }

  /** A fresh canvas; a blank one (no engine will draw on it) is painted the clear colour, so its
   * pixels read as rgb(32, 32, 36) like an engine's empty frame. */
  private newCanvas(blank = false): HTMLCanvasElement {
    const c = document.createElement('canvas');
    if (blank) {
      const g = c.getContext('2d');
      if (g) {
        g.fillStyle = `rgb(${CLEAR_RGB.join(',')})`;
        g.fillRect(0, 0, c.width, c.height);
      }
    }
    c.id = 'splathost-canvas';
    c.className = 'splathost-canvas';
    const old = document.getElementById('splathost-canvas');
    if (old) old.replaceWith(c);
    else this.host.prepend(c);
    this.orbit.attach(c);
    return c;
  }

  /** Clears to a blank canvas (no engine). */
  clear(): void {
    this.generation++;
    this.dropEngine();
    this.canvas = this.newCanvas(true);
  }

  private dropEngine(): void {
    this.engine?.destroy();
    this.engine = null;
  }

  /**
   * Shows a scene: loads it with the right engine, sets the camera (the given one, else one
   * framing the scene's bounds) and resolves once real frames of it have been drawn. A later
   * show or clear supersedes it (it then rejects with a "superseded" error).
   */
  async show(src: SceneSource, camera: CameraState | null): Promise<void> {
    const gen = ++this.generation;
    const name = engineOf(src.format);
    const factory = await loadEngine(name);
    this.assertCurrent(gen);
    // A WebGL context stays bound to its engine: a fresh canvas for every engine.
    this.dropEngine();
    this.canvas = this.newCanvas();
    let drawn = () => {};
    this.engine = factory(this.canvas, { camera: () => this.orbit.get(), frame: () => drawn() });
    const bounds = await this.engine.load(src);
    this.assertCurrent(gen);
    this.orbit.set(camera ?? frameBounds(bounds));
    await new Promise<void>((resolve) => {
      const started = performance.now();
      let lastSample = 0;
      drawn = () => {
        const now = performance.now();
        if (now - lastSample < 150 || gen !== this.generation) return;
        lastSample = now;
        if (litPixels(this.canvas) >= MIN_LIT_PIXELS || now - started > RENDER_TIMEOUT_MS) {
          drawn = () => {};
          resolve();
        }
      };
    });
    this.assertCurrent(gen);
  }

  private assertCurrent(gen: number): void {
    if (gen !== this.generation) throw new Superseded();
  }
}

/** A load that a newer show or clear replaced. */
export class Superseded extends Error {
  constructor() {
    super('superseded');
  }
}

let sampler: CanvasRenderingContext2D | null = null;

/** Counts pixels of a downscaled copy of the canvas that are not the clear colour (the engines
 * keep their drawing buffer, so it can be read between frames). */
function litPixels(canvas: HTMLCanvasElement): number {
  const size = 64;
  if (!sampler) {
    const c = document.createElement('canvas');
    c.width = c.height = size;
    sampler = c.getContext('2d', { willReadFrequently: true });
    if (!sampler) return MIN_LIT_PIXELS; // cannot tell; trust the engine
  }
  sampler.clearRect(0, 0, size, size);
  sampler.drawImage(canvas, 0, 0, size, size);
  const px = sampler.getImageData(0, 0, size, size).data;
  let lit = 0;
  for (let i = 0; i < px.length; i += 4) {
    const d = Math.abs(px[i] - CLEAR_RGB[0]) + Math.abs(px[i + 1] - CLEAR_RGB[1]) + Math.abs(px[i + 2] - CLEAR_RGB[2]);
    if (d > 12) lit++;
  }
  return lit;
}

/** Shows a failure in the page (and on <html data-splathost="error">). */
export function showError(message: string): void {
  setStatus('error');
  let el = document.querySelector<HTMLElement>('.splathost-message');
  if (!el) {
    el = document.createElement('div');
    el.className = 'splathost-message';
    el.setAttribute('role', 'alert');
    document.body.append(el);
  }
  el.textContent = message;
  el.hidden = false;
}

export function hideError(): void {
  const el = document.querySelector<HTMLElement>('.splathost-message');
  if (el) el.hidden = true;
}
