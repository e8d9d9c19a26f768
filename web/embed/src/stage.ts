// The full-window canvas and its scene: picks the engine for the scene's format, loads it by
// dynamic import (a page pulls only the engine it needs), drives the orbit camera, and tells
// when real frames are on screen.
import { type ToneMapping, type LevelV1, rotationOf } from './level.ts';
import { type Bounds, type CameraState, type Vec3, DEFAULT_FOV, Orbit, frameBounds } from './orbit.ts';
import { CLEAR_RGB, type Engine, type EngineFactory, type EngineLook, type SceneFormat, type SceneSource } from './engine.ts';
import { basis, dot, quatFromEuler, rotateBounds, sub } from './geometry.ts';
import { type LoadFigures, type Milestone, figuresNow, markMilestone } from './milestones.ts';

export type { Bounds, CameraState, Vec3 };

/** The look of the frame (levelData background and post), as setLook takes it. */
export interface Look {
  /** The clear colour, '#rrggbb'. */
  background?: string;
  /** Exposure in stops: the colour is multiplied by 2^exposure before the tone mapping. */
  exposure?: number;
  toneMapping?: ToneMapping;
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

/** What project() tells of a 3-D point: where it lands on the canvas, in CSS pixels from the
 * canvas's top-left corner, and whether it is behind the camera (x and y then mean nothing). */
export interface Projected {
  x: number;
  y: number;
  behind: boolean;
}

const DEFAULT_LOOK: EngineLook = { background: CLEAR_RGB, exposure: 1, toneMapping: 'linear' };

/** '#rrggbb' as 0-255 channels, or null when it is not that. */
export function parseColor(hex: string): [number, number, number] | null {
  const m = /^#([0-9a-f]{2})([0-9a-f]{2})([0-9a-f]{2})$/i.exec(hex);
  return m ? [parseInt(m[1], 16), parseInt(m[2], 16), parseInt(m[3], 16)] : null;
}

const easeInOut = (t: number) => (t < 0.5 ? 4 * t * t * t : 1 - Math.pow(-2 * t + 2, 3) / 2);

/**
 * The embed's canvas and its scene: one engine at a time, the orbit camera, the scene's
 * orientation and look, and what overlays need to follow it (project, pointAt, onFrame).
 */
export class Stage {
  readonly orbit = new Orbit();
  canvas: HTMLCanvasElement;
  private engine: Engine | null = null;
  private generation = 0;
  /** The loaded scene's bounds in its own frame (null before a scene is loaded). */
  private localBounds: Bounds | null = null;
  private rotation: Vec3 = rotationOf(null);
  private look: EngineLook = DEFAULT_LOOK;
  private frameListeners = new Set<() => void>();
  private milestoneListeners = new Set<(name: Milestone, figures: LoadFigures) => void>();
  /** The generation of the page's first show, whose load the milestones measure (0: none yet). */
  private firstShow = 0;
  private reached = new Set<Milestone>();
  private flight = 0;

  constructor(private readonly host: HTMLElement) {
    this.canvas = this.newCanvas(true);
    // Shown by the stylesheet only while <html data-splathost="loading">.
    const spinner = document.createElement('div');
    spinner.className = 'splathost-spinner';
    host.append(spinner);
  }

  /** A fresh canvas; a blank one (no engine will draw on it) is painted the clear colour, so its
   * pixels read as the background like an engine's empty frame. */
  private newCanvas(blank = false): HTMLCanvasElement {
    const c = document.createElement('canvas');
    if (blank) {
      const g = c.getContext('2d');
      if (g) {
        g.fillStyle = `rgb(${this.look.background.join(',')})`;
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
    this.localBounds = null;
    this.canvas = this.newCanvas(true);
  }

  private dropEngine(): void {
    this.engine?.destroy();
    this.engine = null;
  }

  /** The loaded scene's bounds as shown (after its orientation), or null before a load. */
  get bounds(): Bounds | null {
    return this.localBounds && rotateBounds(this.localBounds, quatFromEuler(this.rotation));
  }

  /** The orientation applied to the scene (Euler degrees, levelData.orientation.rotation). */
  get orientation(): Vec3 {
    return [...this.rotation];
  }

  /**
   * Shows a scene: loads it with the right engine, turns it by the level's orientation (the
   * default when it names none), applies its background and post look, sets the camera (the
   * given one, else one framing the turned scene's bounds) and resolves once real frames of it
   * have been drawn. A later show or clear supersedes it (it then rejects with a "superseded"
   * error).
   */
  async show(src: SceneSource, camera: CameraState | null, level?: LevelV1): Promise<void> {
    const gen = ++this.generation;
    if (!this.firstShow) this.firstShow = gen;
    this.flight++;
    const name = engineOf(src.format);
    const factory = await loadEngine(name);
    this.assertCurrent(gen);
    // A WebGL context stays bound to its engine: a fresh canvas for every engine.
    this.dropEngine();
    this.localBounds = null;
    this.canvas = this.newCanvas();
    let drawn = () => {};
    this.engine = factory(this.canvas, {
      camera: () => this.orbit.get(),
      frame: () => {
        drawn();
        for (const cb of [...this.frameListeners]) cb();
      },
      whole: (full) => this.whole(gen, full),
    });
    this.rotation = rotationOf(level);
    if (level) this.look = resolveLook(DEFAULT_LOOK, { background: level.background?.color, ...level.post });
    this.engine.setLook(this.look);
    this.localBounds = await this.engine.load(src);
    this.assertCurrent(gen);
    this.engine.setRotation(quatFromEuler(this.rotation));
    this.orbit.set(camera ?? frameBounds(this.bounds!));
    await new Promise<void>((resolve) => {
      const started = performance.now();
      let lastSample = 0;
      drawn = () => {
        const now = performance.now();
        if (now - lastSample < 150 || gen !== this.generation) return;
        lastSample = now;
        if (litPixels(this.canvas, this.look.background) >= MIN_LIT_PIXELS || now - started > RENDER_TIMEOUT_MS) {
          drawn = () => {};
          resolve();
        }
      };
    });
    this.assertCurrent(gen);
  }

  /** Turns the loaded scene to rotation (Euler degrees, X then Y then Z about the world axes)
   * and returns its bounds after the turn (to frame it again). Before a load it only records
   * the rotation and returns empty bounds at the origin. */
  setOrientation(rotation: Vec3): Bounds {
    this.rotation = [...rotation];
    this.engine?.setRotation(quatFromEuler(this.rotation));
    return this.bounds ?? { min: [0, 0, 0], max: [0, 0, 0] };
  }

  /** Changes the background colour, exposure or tone mapping; parts left out stay as they are,
   * malformed ones are ignored. */
  setLook(look: Look): void {
    this.look = resolveLook(this.look, look);
    this.engine?.setLook(this.look);
    if (!this.engine) this.canvas = this.newCanvas(true);
  }

  /** The current look, resolved. */
  get currentLook(): EngineLook {
    return this.look;
  }

  /** The engine drew show gen's scene whole (full: at the detail the view needs): the page's
   * first scene reaches its milestones, each once, written on the page and told to listeners. */
  private whole(gen: number, full: boolean): void {
    if (gen !== this.firstShow || gen !== this.generation) return;
    const due: Milestone[] = full ? ['firstFrame', 'fullDetail'] : ['firstFrame'];
    for (const name of due) {
      if (this.reached.has(name)) continue;
      this.reached.add(name);
      const figures = figuresNow();
      markMilestone(name, figures);
      for (const cb of [...this.milestoneListeners]) cb(name, figures);
    }
  }

  /** Calls cb when the page's first scene reaches a load milestone (milestones.ts); returns the
   * unsubscribe. */
  onMilestone(cb: (name: Milestone, figures: LoadFigures) => void): () => void {
    this.milestoneListeners.add(cb);
    return () => {
      this.milestoneListeners.delete(cb);
    };
  }

  /** Calls cb after every drawn frame (overlays follow the camera); returns the unsubscribe. */
  onFrame(cb: () => void): () => void {
    this.frameListeners.add(cb);
    return () => {
      this.frameListeners.delete(cb);
    };
  }

  /** The canvas's size in CSS pixels (at least 1x1). */
  private viewport(): { width: number; height: number } {
    return { width: Math.max(1, this.canvas.clientWidth), height: Math.max(1, this.canvas.clientHeight) };
  }

  /** Where the world point p is drawn on the canvas, as both engines project it (vertical fov,
   * the canvas's aspect). */
  project(p: Vec3): Projected {
    const cam = this.orbit.get();
    const { right, up, forward } = basis(cam);
    const d = sub(p, cam.position);
    const z = dot(d, forward);
    const { width, height } = this.viewport();
    const f = 1 / Math.tan(((cam.fov ?? DEFAULT_FOV) * Math.PI) / 360);
    if (z <= 1e-9) return { x: NaN, y: NaN, behind: true };
    const ndcX = (dot(d, right) * f) / (z * (width / height));
    const ndcY = (dot(d, up) * f) / z;
    return { x: ((ndcX + 1) / 2) * width, y: ((1 - ndcY) / 2) * height, behind: false };
  }

  /** The point under the canvas pixel (x, y) (CSS pixels) on the plane through the orbit target
   * that faces the camera: where the editor puts a new annotation. */
  pointAt(x: number, y: number): Vec3 {
    const cam = this.orbit.get();
    const { right, up, forward } = basis(cam);
    const { width, height } = this.viewport();
    const t = Math.tan(((cam.fov ?? DEFAULT_FOV) * Math.PI) / 360);
    const dist = dot(sub(cam.target, cam.position), forward);
    const sx = ((2 * x) / width - 1) * t * (width / height);
    const sy = (1 - (2 * y) / height) * t;
    // The ray position + s·(forward + sx·right + sy·up) meets the plane at s = dist.
    return [0, 1, 2].map((k) => cam.position[k] + dist * (forward[k] + sx * right[k] + sy * up[k])) as Vec3;
  }

  /** Moves the camera to cam in ms milliseconds (eased; the orbit swings round its shorter way).
   * Resolves when it arrives, or early when another flight or the user takes over. */
  flyTo(cam: CameraState, ms = 800): Promise<void> {
    const id = ++this.flight;
    const from = { target: [...this.orbit.target] as Vec3, yaw: this.orbit.yaw, pitch: this.orbit.pitch, distance: this.orbit.distance, fov: this.orbit.fov };
    const to = new Orbit();
    to.set(cam);
    let dyaw = to.yaw - from.yaw;
    dyaw = Math.atan2(Math.sin(dyaw), Math.cos(dyaw));
    const start = performance.now();
    let last: string | null = null;
    const key = () => JSON.stringify([this.orbit.target, this.orbit.yaw, this.orbit.pitch, this.orbit.distance, this.orbit.fov]);
    return new Promise((resolve) => {
      const step = () => {
        // Superseded, or the user moved the camera since the last step.
        if (id !== this.flight || (last !== null && key() !== last)) return resolve();
        const t = ms <= 0 ? 1 : Math.min(1, (performance.now() - start) / ms);
        const e = easeInOut(t);
        for (let k = 0; k < 3; k++) this.orbit.target[k] = from.target[k] + (to.target[k] - from.target[k]) * e;
        this.orbit.yaw = from.yaw + dyaw * e;
        this.orbit.pitch = from.pitch + (to.pitch - from.pitch) * e;
        this.orbit.distance = from.distance * Math.pow(to.distance / from.distance, e);
        this.orbit.fov = from.fov + (to.fov - from.fov) * e;
        if (t >= 1) {
          this.orbit.set(cam);
          return resolve();
        }
        last = key();
        requestAnimationFrame(step);
      };
      step();
    });
  }

  private assertCurrent(gen: number): void {
    if (gen !== this.generation) throw new Superseded();
  }
}

/** base with the valid parts of look applied. */
function resolveLook(base: EngineLook, look: Look): EngineLook {
  const out = { ...base };
  const bg = typeof look.background === 'string' ? parseColor(look.background) : null;
  if (bg) out.background = bg;
  if (typeof look.exposure === 'number' && Number.isFinite(look.exposure)) out.exposure = Math.pow(2, Math.max(-10, Math.min(10, look.exposure)));
  if (look.toneMapping === 'linear' || look.toneMapping === 'aces' || look.toneMapping === 'neutral') out.toneMapping = look.toneMapping;
  return out;
}

/** A load that a newer show or clear replaced. */
export class Superseded extends Error {
  constructor() {
    super('superseded');
  }
}

let sampler: CanvasRenderingContext2D | null = null;

/** Counts pixels of a downscaled copy of the canvas that are not the background (the engines
 * keep their drawing buffer, so it can be read between frames). */
function litPixels(canvas: HTMLCanvasElement, bg: readonly [number, number, number]): number {
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
    const d = Math.abs(px[i] - bg[0]) + Math.abs(px[i + 1] - bg[1]) + Math.abs(px[i + 2] - bg[2]);
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
