// Opening scenes in the editor: an existing one (the boot's, the host's openProject, a fresh
// copy), a blank canvas (createProject), or a picked file that becomes a new scene on save.
import type { Splat } from '../api.ts';
import { formatOfName, sourceOfSplat } from '../engine.ts';
import { readLevel } from '../level.ts';
import { cameraFromLevelData } from '../orbit.ts';
import { Superseded, hideError, setStatus, showError } from '../stage.ts';
import type { Actions } from './actions.ts';
import type { AnnotationsEditor } from './annotations.ts';
import type { AudioEditor } from './audio.ts';
import type { Collab } from './collab.ts';
import type { EditorContext } from './context.ts';
import type { LevelEditor } from './level-editor.ts';

/** The editor's parts that follow the open scene. */
export interface SceneParts {
  collab: Collab;
  level: LevelEditor;
  annotations: AnnotationsEditor;
  audio: AudioEditor;
  actions: Actions;
}

/** Opens scenes into the state, the panel, the stage and the room. */
export class Scenes {
  constructor(
    private readonly ctx: EditorContext,
    private readonly parts: SceneParts,
  ) {
    this.bindFile();
  }

  /** Shows a scene; failures of the load become the page's error state and an `error` event. */
  private async show(load: () => Promise<void>): Promise<boolean> {
    setStatus('loading');
    hideError();
    try {
      await load();
      setStatus('rendered');
      return true;
    } catch (err) {
      if (err instanceof Superseded) return false;
      const message = err instanceof Error ? err.message : String(err);
      showError(`This scene could not be shown: ${message}`);
      this.ctx.post('error', { message });
      return false;
    }
  }

  /** A new levelData to edit: the panel and the stage follow it. */
  private resetLevel(raw: unknown): void {
    this.ctx.state.level = readLevel(raw);
    this.parts.annotations.reset();
    this.parts.audio.reset();
    this.parts.level.apply();
  }

  /** Opens an existing scene; announce posts projectLoaded once it is shown. */
  async openProject(splatId: string, announce: boolean): Promise<boolean> {
    const { state, panel } = this.ctx;
    const { parts } = this;
    let splat: Splat;
    try {
      setStatus('loading');
      splat = await this.ctx.api.splat(splatId);
    } catch (err) {
      parts.actions.failed(err, 'open');
      showError(`This scene could not be opened: ${err instanceof Error ? err.message : String(err)}`);
      return false;
    }
    state.current = splat;
    state.pendingFile = null;
    panel.fill(splat);
    this.resetLevel(splat.levelData);
    panel.say('');
    state.setDirty(false);
    parts.collab.join(splat.id);
    const ok = await this.show(() => this.ctx.stage.show(sourceOfSplat(splat), cameraFromLevelData(splat.levelData), state.level));
    if (ok) parts.collab.camera();
    if (ok && announce) this.ctx.post('projectLoaded', { splatId: splat.id });
    return ok;
  }

  /** Clears the editor to a blank canvas. */
  createProject(): void {
    const { state, panel } = this.ctx;
    this.ctx.stage.clear();
    state.current = null;
    state.pendingFile = null;
    panel.fill(null);
    this.resetLevel(null);
    this.parts.collab.join(null);
    hideError();
    setStatus('blank');
    state.setDirty(false);
    panel.say('');
    this.ctx.post('projectCreated', null);
  }

  /** The state of a page that starts with no scene. */
  blank(): void {
    this.ctx.panel.fill(null);
    setStatus('blank');
    this.ctx.state.setDirty(false);
  }

  private bindFile(): void {
    const { state, panel } = this.ctx;
    const ui = panel.ui;
    ui.file.addEventListener('change', () => {
      const file = ui.file.files?.[0];
      if (!file) return;
      const format = formatOfName(file.name);
      if (!format) {
        panel.say('Pick a .ply, .splat, .ksplat or .sog file.', 'error');
        this.ctx.post('error', { message: `unsupported scene file: ${file.name}` });
        return;
      }
      // A picked file starts a new scene (it is uploaded on save), alone until it is saved.
      state.current = null;
      state.pendingFile = file;
      this.parts.collab.join(null);
      this.resetLevel(null);
      document.documentElement.dataset.splatId = '';
      if (!ui.title.value.trim()) ui.title.value = file.name.replace(/\.[^.]+$/, '');
      state.setDirty(true);
      void this.show(() => this.ctx.stage.show({ format, file }, null, state.level));
    });
  }
}
