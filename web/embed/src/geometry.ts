// The geometry of the stage: the levelData orientation as a quaternion, turned points and
// bounds, and the camera's basis (what projecting a point onto the canvas needs).
import type { Bounds, CameraState, Vec3 } from './orbit.ts';

/** A unit quaternion [x, y, z, w]. */
export type Quat = [number, number, number, number];

/** The quaternion of Euler degrees applied X first, then Y, then Z about the world's fixed axes
 * (q = qz·qy·qx, PlayCanvas's setFromEulerAngles), the levelData.orientation convention. */
export function quatFromEuler(deg: Vec3): Quat {
  const [hx, hy, hz] = deg.map((d) => (d * Math.PI) / 360);
  const sx = Math.sin(hx), cx = Math.cos(hx);
  const sy = Math.sin(hy), cy = Math.cos(hy);
  const sz = Math.sin(hz), cz = Math.cos(hz);
  return [
    sx * cy * cz - cx * sy * sz,
    cx * sy * cz + sx * cy * sz,
    cx * cy * sz - sx * sy * cz,
    cx * cy * cz + sx * sy * sz,
  ];
}

/** v turned by the unit quaternion q. */
export function rotate(q: Quat, v: Vec3): Vec3 {
  const [x, y, z, w] = q;
  // t = 2·(q.xyz × v); v' = v + w·t + q.xyz × t
  const tx = 2 * (y * v[2] - z * v[1]);
  const ty = 2 * (z * v[0] - x * v[2]);
  const tz = 2 * (x * v[1] - y * v[0]);
  return [
    v[0] + w * tx + (y * tz - z * ty),
    v[1] + w * ty + (z * tx - x * tz),
    v[2] + w * tz + (x * ty - y * tx),
  ];
}

/** The box around b turned by q (exact for quarter turns, a little larger otherwise). */
export function rotateBounds(b: Bounds, q: Quat): Bounds {
  const min: Vec3 = [Infinity, Infinity, Infinity];
  const max: Vec3 = [-Infinity, -Infinity, -Infinity];
  for (let i = 0; i < 8; i++) {
    const p = rotate(q, [i & 1 ? b.max[0] : b.min[0], i & 2 ? b.max[1] : b.min[1], i & 4 ? b.max[2] : b.min[2]]);
    for (let k = 0; k < 3; k++) {
      // Quarter turns leave float dust (1e-16) that would show in a stored camera.
      const v = Math.round(p[k] * 1e9) / 1e9;
      min[k] = Math.min(min[k], v);
      max[k] = Math.max(max[k], v);
    }
  }
  return { min, max };
}

/** a − b. */
export const sub = (a: Vec3, b: Vec3): Vec3 => [a[0] - b[0], a[1] - b[1], a[2] - b[2]];
/** The dot product of a and b. */
export const dot = (a: Vec3, b: Vec3) => a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
const cross = (a: Vec3, b: Vec3): Vec3 => [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]];
const norm = (a: Vec3): Vec3 => {
  const l = Math.hypot(...a) || 1;
  return [a[0] / l, a[1] / l, a[2] / l];
};

/** The camera's orthonormal basis: right, up and forward (towards the target), world Y up. */
export function basis(cam: CameraState): { right: Vec3; up: Vec3; forward: Vec3 } {
  const forward = norm(sub(cam.target, cam.position));
  let right = cross(forward, [0, 1, 0]);
  // Looking straight up or down: any right will do; keep the one the yaw of the orbit gives.
  if (Math.hypot(...right) < 1e-9) right = [1, 0, 0];
  right = norm(right);
  return { right, up: cross(right, forward), forward };
}
