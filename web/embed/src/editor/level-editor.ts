// Editing the scene's fields and its levelData's view: title, description, visibility and the
// allow toggles; start camera, orientation, background, exposure and tone mapping. Each local
// change is shared with the room; apply() makes the stage and the panel show the state's level.
import type { Visibility } from '../../../sdk/src/protocol.ts';
import { type LevelV1, type ToneMapping, readLevel, rotationOf } from '../level.ts';
import type { RoomFields } from '../room.ts';
import type { EditorContext } from './context.ts';
import { DEFAULT_BACKGROUND } from './panel.ts';

/** What the level editor hands on: shared changes, and the sections it does not draw itself. */
export interface LevelHooks {
  /** Shares a local change with the room and marks the scene dirty. */
  changed(fields: RoomFields): void;
  renderAnnotations(): void;
  renderAudio(): void;
}

const turn = (deg: number) => ((deg % 360) + 360) % 360;

/** The scene's fields and levelData, between the panel, the stage and the room. */
export class LevelEditor {
  constructor(
    private readonly ctx: EditorContext,
    private readonly hooks: LevelHooks,
  ) {
    this.bindFields();
    this.bindView();
  }

  /** Makes the stage and the panel show the level (only the keys given, or all of them). */
  apply(keys?: string[]): void {
    const { stage, state: { level } } = this.ctx;
    const ui = this.ctx.panel.ui;
    const has = (k: string) => !keys || keys.includes(k);
    if (has('orientation')) {
      stage.setOrientation(rotationOf(level));
      ui.rotation.value = rotationOf(level).map((n) => `${n}°`).join(' ');
    }
    if (has('background') || has('post')) {
      stage.setLook({
        background: level.background?.color ?? DEFAULT_BACKGROUND,
        exposure: level.post?.exposure ?? 0,
        toneMapping: level.post?.toneMapping ?? 'linear',
      });
      ui.background.value = level.background?.color ?? DEFAULT_BACKGROUND;
      ui.exposure.value = String(level.post?.exposure ?? 0);
      ui.exposureValue.value = (level.post?.exposure ?? 0).toFixed(1);
      ui.toneMapping.value = level.post?.toneMapping ?? 'linear';
    }
    if (has('annotations')) this.hooks.renderAnnotations();
    if (has('audio')) this.hooks.renderAudio();
  }

  /** Sets (or with undefined removes) one top-level levelData key as a local edit. */
  setKey<K extends keyof LevelV1 & string>(key: K, value: LevelV1[K] | undefined): void {
    const next: Record<string, unknown> = { ...this.ctx.state.level };
    if (value === undefined) delete next[key];
    else next[key] = value;
    this.ctx.state.level = readLevel(next);
    this.apply([key]);
    this.hooks.changed({ levelData: { [key]: value ?? null } });
  }

  private bindFields(): void {
    const ui = this.ctx.panel.ui;
    const changed = (fields: RoomFields) => this.hooks.changed(fields);
    ui.title.addEventListener('input', () => changed({ title: ui.title.value }));
    ui.description.addEventListener('input', () => changed({ description: ui.description.value }));
    ui.visibility.addEventListener('change', () => changed({ visibility: ui.visibility.value as Visibility }));
    ui.allowComments.addEventListener('change', () => changed({ allowComments: ui.allowComments.checked }));
    ui.allowReactions.addEventListener('change', () => changed({ allowReactions: ui.allowReactions.checked }));
  }

  private bindView(): void {
    const { stage, state } = this.ctx;
    const ui = this.ctx.panel.ui;
    // Orbiting moves the start camera, as the editor always did: what you look at when you save is
    // what visitors first see. The others see it as an unsaved change (their own views stay put)
    // and see our marker move.
    stage.orbit.onChange = () => {
      if (!state.editing()) return;
      const cam = stage.orbit.get();
      state.level = { ...state.level, camera: cam };
      this.hooks.changed({ levelData: { camera: cam } });
    };

    ui.startCamera.addEventListener('click', () => {
      if (!state.editing()) return;
      this.setKey('camera', stage.orbit.get());
      this.ctx.panel.say('The start camera is this view.');
    });
    ui.goStart.addEventListener('click', () => {
      if (state.level.camera) void stage.flyTo(state.level.camera);
    });

    ui.flip.addEventListener('click', () => {
      if (!state.editing()) return;
      const [x, y, z] = rotationOf(state.level);
      this.setKey('orientation', { rotation: [turn(x + 180), y, z] });
    });
    ui.rotate.addEventListener('click', () => {
      if (!state.editing()) return;
      const [x, y, z] = rotationOf(state.level);
      this.setKey('orientation', { rotation: [x, turn(y + 90), z] });
    });
    ui.background.addEventListener('input', () => {
      if (state.editing()) this.setKey('background', { color: ui.background.value.toLowerCase() });
    });
    const setPost = () => {
      if (!state.editing()) return;
      ui.exposureValue.value = Number(ui.exposure.value).toFixed(1);
      this.setKey('post', { exposure: Number(ui.exposure.value), toneMapping: ui.toneMapping.value as ToneMapping });
    };
    ui.exposure.addEventListener('input', setPost);
    ui.toneMapping.addEventListener('change', setPost);
  }
}
