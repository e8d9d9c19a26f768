// Shared pieces of the viewer's levelData tests (viewer-*.test.mjs): the standing scene's
// annotations and start camera, reading markers and the card.
import assert from 'node:assert/strict';

// In the viewer's world frame (Y up, after the default orientation) the ground lies at y -0.6 and
// the column stands on it at x 0.6, up to y 1.2.
export const START = { position: [0, 1, 5], target: [0, 0.3, 0], fov: 50 };
export const COLUMN = { id: 'column', position: [0.6, 0.3, 0], title: 'The column', text: 'A red column on green ground.' };
export const GROUND = {
  id: 'ground', position: [-0.9, -0.6, 0.5], title: 'The ground', text: '',
  camera: { position: [-0.9, 1.5, 3], target: [-0.9, -0.6, 0.5], fov: 60 },
};
export const LEVEL = { version: 1, camera: START, annotations: [COLUMN, GROUND] };

/** Where a pinhole camera (vertical fov, Y up) draws p on a width×height canvas: an independent
 * statement of what both engines do, to check the viewer's camera and markers against. */
export function expectedPixel(cam, p, width, height) {
  const sub = (a, b) => a.map((v, i) => v - b[i]);
  const dot = (a, b) => a.reduce((s, v, i) => s + v * b[i], 0);
  const unit = (a) => { const l = Math.hypot(...a); return a.map((v) => v / l); };
  const cross = (a, b) => [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]];
  const f = unit(sub(cam.target, cam.position));
  const r = unit(cross(f, [0, 1, 0]));
  const u = cross(r, f);
  const d = sub(p, cam.position);
  const t = Math.tan(((cam.fov ?? 60) * Math.PI) / 360);
  const x = dot(d, r) / (dot(d, f) * t * (width / height));
  const y = dot(d, u) / (dot(d, f) * t);
  return { x: ((x + 1) / 2) * width, y: ((1 - y) / 2) * height };
}

/** The markers in the frame: id → {n (its number), x, y (its centre in canvas pixels), hidden}. */
export function markers(frame) {
  return frame.evaluate(() => {
    const c = document.getElementById('splathost-canvas').getBoundingClientRect();
    const out = {};
    for (const el of document.querySelectorAll('[data-annotation-id]')) {
      const r = el.getBoundingClientRect();
      out[el.dataset.annotationId] = {
        n: el.textContent, hidden: el.hidden, x: r.left + r.width / 2 - c.left, y: r.top + r.height / 2 - c.top,
      };
    }
    return { markers: out, width: c.width, height: c.height };
  });
}

/** The card's state: {hidden, id, title, text}. */
export function card(frame) {
  return frame.evaluate(() => {
    const el = document.querySelector('[data-annotation-card]');
    return el && { hidden: el.hidden, id: el.dataset.annotationCard, title: el.querySelector('h2')?.textContent, text: el.querySelector('p')?.textContent };
  });
}

export const isRed = ([r, g, b]) => r - Math.max(g, b) > 60;
export const isGreen = ([r, g, b]) => g - Math.max(r, b) > 60;
export const near = (m, p, tol, what) => assert.ok(Math.hypot(m.x - p.x, m.y - p.y) <= tol,
  `${what}: at (${m.x.toFixed(1)}, ${m.y.toFixed(1)}), want (${p.x.toFixed(1)}, ${p.y.toFixed(1)})`);

