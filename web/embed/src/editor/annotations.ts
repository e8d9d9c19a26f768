// Editing the scene's annotations: the list in the panel, the viewer's hotspots on the view, and
// placing a new one with a click in the scene.
import { Hotspots } from '../hotspots.ts';
import { type Annotation, MAX_ANNOTATIONS } from '../level.ts';
import type { Vec3 } from '../orbit.ts';
import type { EditorContext } from './context.ts';
import { h } from './panel.ts';
import type { SetLevelKey } from './state.ts';

/** A fresh annotation id (levelData v1: 1-64 of [A-Za-z0-9_-]). */
function annotationId(): string {
  return 'a' + crypto.randomUUID().replace(/-/g, '').slice(0, 12);
}

/** The annotations section and the hotspots. */
export class AnnotationsEditor {
  private readonly hotspots: Hotspots;
  /** Placing: the next click (not a drag) in the view puts a new annotation there. */
  private placing = false;

  constructor(
    private readonly ctx: EditorContext,
    private readonly setLevelKey: SetLevelKey,
  ) {
    // The viewer's hotspots, on the view: selecting one (its marker, its row, a new one) flies the
    // camera to it and opens its card, as a visitor will see it.
    this.hotspots = new Hotspots(ctx.stage, ctx.panel.view);
    this.hotspots.onSelect = (a) => this.highlightRow(a?.id ?? null);
    this.bindAdd();
    this.bindPlacing();
  }

  private list(): Annotation[] {
    return this.ctx.state.level.annotations ?? [];
  }

  private set(list: Annotation[]): void {
    this.setLevelKey('annotations', list);
  }

  private update(id: string, patch: Partial<Annotation>): void {
    this.set(this.list().map((a) => (a.id === id ? { ...a, ...patch } : a)));
  }

  /** A new levelData: nothing selected, nothing being placed. */
  reset(): void {
    this.hotspots.select(null);
    this.setPlacing(false);
  }

  /** Marks the row of the selected annotation (the hotspots hold the selection). */
  private highlightRow(id: string | null): void {
    for (const li of this.ctx.panel.ui.annotations.querySelectorAll<HTMLElement>('[data-annotation-row]')) {
      const on = li.dataset.annotationRow === id;
      li.toggleAttribute('data-selected', on);
      if (on) li.scrollIntoView({ block: 'nearest' });
    }
  }

  /** Selects an annotation as its hotspot would (the camera flies there), unless it is already. */
  private select(id: string): void {
    if (this.hotspots.selectedId !== id) this.hotspots.select(id);
  }

  /**
   * The annotation list. It is rebuilt only when its set or order changes; otherwise each row's
   * fields are updated in place, except the one being typed in (a remote edit of the same field
   * lands when its author stops, as the last writer wins on save anyway).
   */
  render(): void {
    const list = this.list();
    const el = this.ctx.panel.ui.annotations;
    this.hotspots.set(list);
    const rows = [...el.querySelectorAll<HTMLElement>('[data-annotation-row]')];
    const sameSet = rows.length === list.length && rows.every((r, i) => r.dataset.annotationRow === list[i].id);
    if (!sameSet) el.replaceChildren(...list.map((a) => this.row(a)));
    for (const a of list) {
      const li = el.querySelector<HTMLElement>(`[data-annotation-row="${a.id}"]`);
      if (!li) continue;
      const title = li.querySelector<HTMLInputElement>('input[name=annotation-title]')!;
      const text = li.querySelector<HTMLTextAreaElement>('textarea[name=annotation-text]')!;
      if (document.activeElement !== title && title.value !== a.title) title.value = a.title;
      if (document.activeElement !== text && text.value !== a.text) text.value = a.text;
      li.toggleAttribute('data-has-camera', !!a.camera);
    }
    this.highlightRow(this.hotspots.selectedId);
  }

  private row(a: Annotation): HTMLElement {
    const li = h('li', { 'data-annotation-row': a.id });
    const title = h('input', { name: 'annotation-title', type: 'text', maxlength: '120', 'aria-label': 'Annotation title' });
    title.value = a.title;
    const text = h('textarea', { name: 'annotation-text', maxlength: '2000', rows: '2', 'aria-label': 'Annotation text' });
    text.value = a.text;
    const go = h('button', { type: 'button', 'data-action': 'go-annotation', title: 'Look from this annotation\'s view' }, 'Go');
    const view = h('button', { type: 'button', 'data-action': 'annotation-view', title: 'Show this annotation from the current view' }, 'Use current view');
    const del = h('button', { type: 'button', 'data-action': 'delete-annotation' }, 'Delete');
    title.addEventListener('focus', () => this.select(a.id));
    text.addEventListener('focus', () => this.select(a.id));
    // An empty title is not a valid annotation: it is kept as typed, and saved once it has one.
    title.addEventListener('input', () => {
      if (title.value.trim()) this.update(a.id, { title: title.value });
    });
    text.addEventListener('input', () => this.update(a.id, { text: text.value }));
    go.addEventListener('click', () => this.hotspots.select(a.id));
    view.addEventListener('click', () => {
      this.update(a.id, { camera: this.ctx.stage.orbit.get() });
      this.ctx.panel.say('The annotation shows from this view.');
    });
    del.addEventListener('click', () => this.set(this.list().filter((x) => x.id !== a.id)));
    const buttons = h('div', { class: 'splathost-row' });
    buttons.append(go, view, del);
    li.append(title, text, buttons);
    return li;
  }

  private setPlacing(on: boolean): void {
    this.placing = on;
    document.documentElement.toggleAttribute('data-placing', on);
    this.ctx.panel.ui.addAnnotation.setAttribute('aria-pressed', String(on));
    if (on) this.ctx.panel.say('Click in the scene where the annotation goes (Esc cancels).');
  }

  private bindAdd(): void {
    const { panel } = this.ctx;
    panel.ui.addAnnotation.addEventListener('click', () => {
      if (!this.ctx.state.editing()) {
        panel.say('Open or pick a scene first.', 'error');
        return;
      }
      if (this.list().length >= MAX_ANNOTATIONS) {
        panel.say(`A scene has at most ${MAX_ANNOTATIONS} annotations.`, 'error');
        return;
      }
      this.setPlacing(!this.placing);
    });
    window.addEventListener('keydown', (e) => {
      if (e.key === 'Escape' && this.placing) {
        this.setPlacing(false);
        panel.say('');
      }
    });
  }

  private bindPlacing(): void {
    const { stage, panel } = this.ctx;
    // The canvas is replaced for every engine: listen on the view, which holds it.
    let down: { x: number; y: number } | null = null;
    panel.view.addEventListener('pointerdown', (e) => {
      down = e.target === stage.canvas ? { x: e.clientX, y: e.clientY } : null;
    }, true);
    panel.view.addEventListener('pointerup', (e) => {
      const start = down;
      down = null;
      if (!this.placing || !start || Math.hypot(e.clientX - start.x, e.clientY - start.y) > 4) return;
      const rect = stage.canvas.getBoundingClientRect();
      const position = stage.pointAt(e.clientX - rect.left, e.clientY - rect.top);
      const round = (n: number) => Math.round(n * 1e5) / 1e5;
      const a: Annotation = {
        id: annotationId(),
        position: position.map(round) as Vec3,
        title: `Annotation ${this.list().length + 1}`,
        text: '',
        // Shown from where it was placed, until 'Use current view' says otherwise.
        camera: stage.orbit.get(),
      };
      this.setPlacing(false);
      this.set([...this.list(), a]);
      this.hotspots.select(a.id);
      panel.say('Annotation added: give it a title and a text.');
      panel.ui.annotations.querySelector<HTMLInputElement>(`[data-annotation-row="${a.id}"] input[name=annotation-title]`)?.select();
    }, true);
  }
}
