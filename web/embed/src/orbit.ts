// Orbit camera state and pointer controls shared by both engines: each engine only copies
// position, target and fov onto its own camera every frame.

export type Vec3 = [number, number, number];

/**
 * The camera the embeds read from and write to levelData.camera:
 *   { position: [x, y, z], target: [x, y, z], fov?: number (vertical, degrees) }
 * Scene units, right-handed, Y up (as both engines). Anything else in levelData is kept as is.
 */
export interface CameraState {
  position: Vec3;
  target: Vec3;
  fov?: number;
}

export interface Bounds {
  min: Vec3;
  max: Vec3;
}

export const DEFAULT_FOV = 60;

const isVec3 = (v: unknown): v is Vec3 =>
  Array.isArray(v) && v.length === 3 && v.every((n) => typeof n === 'number' && Number.isFinite(n));

/** The camera of a scene's levelData, or null when it has none (or a malformed one). */
export function cameraFromLevelData(levelData: unknown): CameraState | null {
  if (!levelData || typeof levelData !== 'object') return null;
  const cam = (levelData as Record<string, unknown>).camera as Record<string, unknown> | undefined;
  if (!cam || typeof cam !== 'object' || !isVec3(cam.position) || !isVec3(cam.target)) return null;
  const fov = typeof cam.fov === 'number' && cam.fov > 1 && cam.fov < 179 ? cam.fov : undefined;
  return { position: [...cam.position], target: [...cam.target], ...(fov ? { fov } : {}) };
}

/** A camera that shows the whole box: looking at its centre from the front and a little above,
 * far enough that its bounding sphere fits the vertical field of view. */
export function frameBounds(b: Bounds, fov = DEFAULT_FOV): CameraState {
  const center: Vec3 = [0, 1, 2].map((i) => (b.min[i] + b.max[i]) / 2) as Vec3;
  const radius = Math.max(1e-3, Math.hypot(...[0, 1, 2].map((i) => (b.max[i] - b.min[i]) / 2)));
  const dist = (radius / Math.sin((fov * Math.PI) / 360)) * 1.05;
  const pitch = (20 * Math.PI) / 180;
  return {
    position: [center[0], center[1] + dist * Math.sin(pitch), center[2] + dist * Math.cos(pitch)],
    target: center,
    fov,
  };
}

/** Orbit controls: drag rotates, right/shift-drag pans, wheel or pinch zooms. onChange fires on
 * every user move (the editor marks the scene dirty). */
export class Orbit {
  target: Vec3 = [0, 0, 0];
  yaw = 0;
  pitch = 0;
  distance = 5;
  fov = DEFAULT_FOV;
  onChange: () => void = () => {};
  private detach: () => void = () => {};

  set(cam: CameraState): void {
    const d: Vec3 = [0, 1, 2].map((i) => cam.position[i] - cam.target[i]) as Vec3;
    this.target = [...cam.target];
    this.distance = Math.max(1e-4, Math.hypot(...d));
    this.pitch = Math.asin(Math.max(-1, Math.min(1, d[1] / this.distance)));
    this.yaw = Math.atan2(d[0], d[2]);
    this.fov = cam.fov ?? DEFAULT_FOV;
  }

  get(): CameraState {
    const cp = Math.cos(this.pitch);
    const t = this.target;
    const r = (n: number) => Math.round(n * 1e5) / 1e5; // a stable, short levelData
    return {
      position: [r(t[0] + this.distance * Math.sin(this.yaw) * cp), r(t[1] + this.distance * Math.sin(this.pitch)), r(t[2] + this.distance * Math.cos(this.yaw) * cp)],
      target: [r(t[0]), r(t[1]), r(t[2])],
      fov: this.fov,
    };
  }

  attach(el: HTMLElement): void {
    this.detach();
    const pointers = new Map<number, { x: number; y: number }>();
    let pinch = 0;
    const down = (e: PointerEvent) => {
      el.setPointerCapture(e.pointerId);
      pointers.set(e.pointerId, { x: e.clientX, y: e.clientY });
      if (pointers.size === 2) pinch = this.spread(pointers);
    };
    const move = (e: PointerEvent) => {
      const p = pointers.get(e.pointerId);
      if (!p) return;
      const dx = e.clientX - p.x;
      const dy = e.clientY - p.y;
      p.x = e.clientX;
      p.y = e.clientY;
      if (pointers.size === 2) {
        const s = this.spread(pointers);
        if (pinch > 0 && s > 0) this.zoom(pinch / s);
        pinch = s;
      } else if (e.buttons & 2 || e.shiftKey) {
        this.pan(dx, dy, el.clientHeight || 1);
      } else {
        this.yaw -= dx * 0.005;
        this.pitch = Math.max(-1.5, Math.min(1.5, this.pitch + dy * 0.005));
      }
      this.onChange();
    };
    const up = (e: PointerEvent) => {
      pointers.delete(e.pointerId);
      pinch = 0;
    };
    const wheel = (e: WheelEvent) => {
      e.preventDefault();
      this.zoom(Math.exp(e.deltaY * 0.001));
      this.onChange();
    };
    const menu = (e: Event) => e.preventDefault();
    el.addEventListener('pointerdown', down);
    el.addEventListener('pointermove', move);
    el.addEventListener('pointerup', up);
    el.addEventListener('pointercancel', up);
    el.addEventListener('wheel', wheel, { passive: false });
    el.addEventListener('contextmenu', menu);
    el.style.touchAction = 'none';
    this.detach = () => {
      el.removeEventListener('pointerdown', down);
      el.removeEventListener('pointermove', move);
      el.removeEventListener('pointerup', up);
      el.removeEventListener('pointercancel', up);
      el.removeEventListener('wheel', wheel);
      el.removeEventListener('contextmenu', menu);
    };
  }

  private spread(p: Map<number, { x: number; y: number }>): number {
    const [a, b] = [...p.values()];
    return Math.hypot(a.x - b.x, a.y - b.y);
  }

  private zoom(factor: number): void {
    this.distance = Math.max(1e-3, Math.min(1e5, this.distance * factor));
  }

  // Moves the target in the view plane, by as much as the pointer moved on screen at the
  // target's depth.
  private pan(dx: number, dy: number, height: number): void {
    const scale = (2 * this.distance * Math.tan((this.fov * Math.PI) / 360)) / height;
    const cy = Math.cos(this.yaw), sy = Math.sin(this.yaw);
    const sp = Math.sin(this.pitch), cp = Math.cos(this.pitch);
    const right: Vec3 = [cy, 0, -sy];
    const up: Vec3 = [-sy * sp, cp, -cy * sp];
    for (let i = 0; i < 3; i++) this.target[i] += (-dx * right[i] + dy * up[i]) * scale;
  }
}
