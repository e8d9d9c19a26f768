// Annotations as hotspots over the canvas: a numbered marker at each annotation's 3-D position,
// moved every frame so it stays on its point as the camera orbits; a click flies the camera to
// the annotation and shows its card (title and text). Shared by the viewer and the editor.
import type { Annotation } from './level.ts';
import type { CameraState, Vec3 } from './orbit.ts';
import type { Stage } from './stage.ts';

export type { Annotation };

/** Numbered markers for a scene's annotations, and the card of the selected one. */
export class Hotspots {
  /** Called when the selection changes: the opened annotation, or null when closed. */
  onSelect: (a: Annotation | null) => void = () => {};
  /** Flight time of a click's camera move, in ms. */
  flightMs = 800;
  private list: Annotation[] = [];
  private markers = new Map<string, HTMLButtonElement>();
  private selected: string | null = null;
  private readonly layer: HTMLDivElement;
  private readonly card: HTMLDivElement;
  private readonly cardTitle: HTMLHeadingElement;
  private readonly cardText: HTMLParagraphElement;
  private readonly unsubscribe: () => void;

  constructor(
    private readonly stage: Stage,
    host: HTMLElement,
  ) {
    this.layer = document.createElement('div');
    this.layer.className = 'splathost-hotspots';
    this.card = document.createElement('div');
    this.card.className = 'splathost-card';
    this.card.setAttribute('data-annotation-card', '');
    this.card.setAttribute('role', 'dialog');
    this.card.hidden = true;
    this.cardTitle = document.createElement('h2');
    this.cardText = document.createElement('p');
    const close = document.createElement('button');
    close.type = 'button';
    close.textContent = '×';
    close.setAttribute('aria-label', 'Close');
    close.addEventListener('click', () => this.select(null));
    this.card.append(this.cardTitle, this.cardText, close);
    host.append(this.layer, this.card);
    this.unsubscribe = stage.onFrame(() => this.place());
  }

  /** Removes the markers and the card and stops following the camera. */
  destroy(): void {
    this.unsubscribe();
    this.layer.remove();
    this.card.remove();
    this.markers.clear();
  }

  /** The annotations shown now. */
  get annotations(): readonly Annotation[] {
    return this.list;
  }

  /** Replaces the annotations (numbered in this order). The selection stays open when its
   * annotation is still there (its card shows the new title and text), else it closes. */
  set(annotations: Annotation[]): void {
    this.list = annotations.map((a) => ({ ...a }));
    const keep = new Set(this.list.map((a) => a.id));
    for (const [id, el] of this.markers) {
      if (!keep.has(id)) {
        el.remove();
        this.markers.delete(id);
      }
    }
    this.list.forEach((a, i) => {
      let el = this.markers.get(a.id);
      if (!el) {
        el = document.createElement('button');
        el.type = 'button';
        el.className = 'splathost-hotspot';
        el.dataset.annotationId = a.id;
        el.addEventListener('click', (e) => {
          e.stopPropagation();
          this.select(el!.dataset.annotationId!);
        });
        // A press on a marker is not the start of an orbit drag.
        el.addEventListener('pointerdown', (e) => e.stopPropagation());
        this.markers.set(a.id, el);
      }
      el.textContent = String(i + 1);
      el.title = a.title;
      el.setAttribute('aria-label', `${i + 1}: ${a.title}`);
      el.setAttribute('aria-pressed', String(a.id === this.selected));
      this.layer.append(el); // in list order
    });
    if (this.selected !== null) {
      const a = this.list.find((x) => x.id === this.selected);
      if (a) this.fillCard(a);
      else this.select(null);
    }
    this.place();
  }

  /**
   * Opens the annotation with this id: its card shows, the camera flies to its camera (or, when
   * it has none, to a view of its position from the current direction, closer) and onSelect
   * fires. null closes the card. An unknown id changes nothing and returns false.
   */
  select(id: string | null): boolean {
    if (id === null) {
      const was = this.selected;
      this.selected = null;
      this.card.hidden = true;
      for (const el of this.markers.values()) el.setAttribute('aria-pressed', 'false');
      if (was !== null) this.onSelect(null);
      return true;
    }
    const a = this.list.find((x) => x.id === id);
    if (!a) return false;
    this.selected = id;
    for (const [mid, el] of this.markers) el.setAttribute('aria-pressed', String(mid === id));
    this.fillCard(a);
    this.card.hidden = false;
    void this.stage.flyTo(a.camera ?? this.viewOf(a.position), this.flightMs);
    this.onSelect(a);
    return true;
  }

  /** The id of the open annotation, or null. */
  get selectedId(): string | null {
    return this.selected;
  }

  private fillCard(a: Annotation): void {
    // The card names its annotation in its own attribute: [data-annotation-id] is the markers'.
    this.card.setAttribute('data-annotation-card', a.id);
    this.cardTitle.textContent = a.title;
    this.cardText.textContent = a.text;
    this.cardText.hidden = !a.text;
  }

  /** A view of p: from the camera's current direction, at 60% of its current distance. */
  private viewOf(p: Vec3): CameraState {
    const cam = this.stage.orbit.get();
    const d = [0, 1, 2].map((k) => cam.position[k] - cam.target[k]);
    return {
      position: [0, 1, 2].map((k) => p[k] + d[k] * 0.6) as Vec3,
      target: [...p],
      fov: cam.fov,
    };
  }

  /** Moves every marker onto its point (hidden behind the camera or off the canvas). */
  private place(): void {
    if (this.markers.size === 0) return;
    const rect = this.stage.canvas.getBoundingClientRect();
    for (const a of this.list) {
      const el = this.markers.get(a.id);
      if (!el) continue;
      const p = this.stage.project(a.position);
      const visible = !p.behind && p.x >= 0 && p.y >= 0 && p.x <= rect.width && p.y <= rect.height;
      el.hidden = !visible;
      if (visible) el.style.transform = `translate(${(rect.left + p.x).toFixed(1)}px, ${(rect.top + p.y).toFixed(1)}px)`;
    }
  }
}
