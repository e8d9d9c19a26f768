// The editor's page: the scene's view and the settings panel beside it, every control the other
// editor modules bind to (the page contract in web/README.md), and the status line.
import type { Splat } from '../api.ts';
import { CLEAR_RGB } from '../engine.ts';
import { TONE_MAPPINGS, type ToneMapping } from '../level.ts';

/** An element with attributes and text. */
export function h<K extends keyof HTMLElementTagNameMap>(tag: K, attrs: Record<string, string> = {}, text = ''): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, v);
  if (text) el.textContent = text;
  return el;
}

function field(label: string, control: HTMLElement): HTMLLabelElement {
  const l = h('label', {}, label);
  l.append(control);
  return l;
}

/** A checkbox with its label on the same line. */
function toggle(label: string, control: HTMLInputElement): HTMLLabelElement {
  const l = h('label', { class: 'splathost-toggle' });
  l.append(control, document.createTextNode(label));
  return l;
}

function section(name: string, title: string, ...children: HTMLElement[]): HTMLElement {
  const s = h('section', { class: 'splathost-section', 'data-section': name, 'aria-label': title });
  s.append(h('h2', {}, title), ...children);
  return s;
}

/** The background the view shows when levelData names none, as the colour input takes it. */
export const DEFAULT_BACKGROUND = `#${CLEAR_RGB.map((c) => c.toString(16).padStart(2, '0')).join('')}`;

const TONE_NAMES: Record<ToneMapping, string> = { linear: 'Linear', aces: 'ACES', neutral: 'Neutral' };

function controls() {
  const ui = {
    presence: h('div', { class: 'splathost-presence', hidden: '' }),
    title: h('input', { name: 'title', type: 'text', maxlength: '200', autocomplete: 'off' }),
    description: h('textarea', { name: 'description', maxlength: '2000', rows: '3' }),
    visibility: h('select', { name: 'visibility' }),
    allowComments: h('input', { name: 'allowComments', type: 'checkbox' }),
    allowReactions: h('input', { name: 'allowReactions', type: 'checkbox' }),
    file: h('input', { type: 'file', name: 'scene-file', accept: '.ply,.splat,.ksplat,.sog' }),
    startCamera: h('button', { type: 'button', 'data-action': 'set-start-camera' }, 'Set start camera'),
    goStart: h('button', { type: 'button', 'data-action': 'go-start-camera' }, 'Go to start camera'),
    flip: h('button', { type: 'button', 'data-action': 'flip', title: 'Turn the scene 180° about X' }, 'Flip'),
    rotate: h('button', { type: 'button', 'data-action': 'rotate', title: 'Turn the scene 90° about the vertical' }, 'Rotate 90°'),
    rotation: h('output', { name: 'rotation', class: 'splathost-hint' }),
    background: h('input', { name: 'background', type: 'color', value: DEFAULT_BACKGROUND }),
    exposure: h('input', { name: 'exposure', type: 'range', min: '-10', max: '10', step: '0.1', value: '0' }),
    exposureValue: h('output', { name: 'exposure-value', class: 'splathost-hint' }, '0.0'),
    toneMapping: h('select', { name: 'toneMapping' }),
    addAnnotation: h('button', { type: 'button', 'data-action': 'add-annotation' }, 'Add annotation'),
    annotations: h('ol', { class: 'splathost-annotations' }),
    audioFile: h('input', { type: 'file', name: 'audio-file', accept: '.mp3,.ogg,audio/mpeg,audio/ogg' }),
    audioInfo: h('div', { class: 'splathost-hint', 'data-audio': 'info' }),
    audioLoop: h('input', { name: 'audioLoop', type: 'checkbox' }),
    audioVolume: h('input', { name: 'audioVolume', type: 'range', min: '0', max: '1', step: '0.05', value: '1' }),
    audioPreview: h('audio', { controls: '', preload: 'none' }),
    removeAudio: h('button', { type: 'button', 'data-action': 'remove-audio' }, 'Remove audio'),
    save: h('button', { type: 'button', 'data-action': 'save' }, 'Save'),
    publish: h('button', { type: 'button', 'data-action': 'publish' }, 'Publish'),
    duplicate: h('button', { type: 'button', 'data-action': 'duplicate' }, 'Duplicate'),
    status: h('div', { class: 'splathost-status', role: 'status', 'aria-live': 'polite' }),
  };
  for (const v of ['private', 'public']) ui.visibility.append(h('option', { value: v }, v === 'private' ? 'Private' : 'Public'));
  for (const t of TONE_MAPPINGS) ui.toneMapping.append(h('option', { value: t }, TONE_NAMES[t]));
  return ui;
}

/** The panel's controls, by name. */
export type Controls = ReturnType<typeof controls>;

/** The editor's layout in the page: the view (where the stage draws) and the panel. */
export class Panel {
  /** Where the stage puts its canvas, and the overlays theirs. */
  readonly view = h('div', { class: 'splathost-view' });
  /** The others' camera markers, which follow our camera over the view. */
  readonly markers = h('div', { class: 'splathost-overlay', 'data-layer': 'peers' });
  readonly ui: Controls = controls();
  /** The audio section's controls, shown while the scene has audio. */
  readonly audioControls = h('div', { class: 'splathost-audio', hidden: '' });

  /** Builds the page into body. */
  constructor(body: HTMLElement) {
    // The scene's view and the panel sit side by side (stacked on narrow screens): the panel never
    // covers the scene, so what the canvas shows — and the thumbnail taken from it — is all scene.
    const layout = h('div', { class: 'splathost-editor' });
    this.view.append(this.markers);
    layout.append(this.view);
    body.append(layout);
    layout.append(this.form());
  }

  private form(): HTMLFormElement {
    const ui = this.ui;
    const panel = h('form', { class: 'splathost-panel', 'aria-label': 'Scene settings' });
    panel.addEventListener('submit', (e) => e.preventDefault());
    const actions = h('div', { class: 'splathost-actions' });
    actions.append(ui.save, ui.publish, ui.duplicate);
    // Save and the status line stay in reach however far the panel is scrolled.
    const footer = h('div', { class: 'splathost-footer' });
    footer.append(actions, ui.status);
    const row = (...els: HTMLElement[]) => {
      const d = h('div', { class: 'splathost-row' });
      d.append(...els);
      return d;
    };
    const exposure = field('Exposure', ui.exposure);
    exposure.append(ui.exposureValue);
    this.audioControls.append(ui.audioInfo, toggle('Loop', ui.audioLoop), field('Volume', ui.audioVolume), ui.audioPreview, ui.removeAudio);
    panel.append(
      ui.presence,
      section('scene', 'Scene',
        field('Title', ui.title),
        field('Description', ui.description),
        field('Visibility', ui.visibility),
        toggle('Allow comments', ui.allowComments),
        toggle('Allow reactions', ui.allowReactions),
        field('Scene file (.ply, .splat, .ksplat, .sog)', ui.file)),
      section('view', 'View',
        row(ui.startCamera, ui.goStart),
        row(ui.flip, ui.rotate, ui.rotation),
        field('Background', ui.background),
        exposure,
        field('Tone mapping', ui.toneMapping)),
      section('annotations', 'Annotations', ui.addAnnotation, ui.annotations),
      section('audio', 'Audio', field('Audio file (.mp3, .ogg)', ui.audioFile), this.audioControls),
      footer,
    );
    return panel;
  }

  /** Shows a message on the status line. */
  say(message: string, tone: 'info' | 'error' = 'info'): void {
    this.ui.status.textContent = message;
    this.ui.status.dataset.tone = tone;
  }

  /** Shows a scene's settings in the form (a blank one's for null). */
  fill(splat: Splat | null): void {
    const ui = this.ui;
    ui.title.value = splat?.title ?? '';
    ui.description.value = splat?.description ?? '';
    ui.visibility.value = splat?.visibility ?? 'private';
    // A new scene starts with both allowed, as a commit makes it (contract item 6).
    ui.allowComments.checked = splat ? splat.allowComments !== false : true;
    ui.allowReactions.checked = splat ? splat.allowReactions !== false : true;
    ui.file.value = '';
    document.documentElement.dataset.splatId = splat?.id ?? '';
  }
}
