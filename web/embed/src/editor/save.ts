// Save, Publish and Duplicate: a picked file uploaded and committed as a new scene, the open
// scene's settings and levelData PATCHed (with a canvas thumbnail on its first save), and a copy
// cloned and opened in place.
import type { Visibility } from '../../../sdk/src/protocol.ts';
import { ApiError, type Splat } from '../api.ts';
import { formatOfName } from '../engine.ts';
import { type LevelV1, readLevel } from '../level.ts';
import type { Actions } from './actions.ts';
import type { Collab } from './collab.ts';
import type { EditorContext } from './context.ts';
import type { LevelEditor } from './level-editor.ts';
import type { Scenes } from './scenes.ts';
import { putSigned, uploadThumbnail } from './uploads.ts';

const CONTENT_TYPES: Record<string, string> = {
  ply: 'application/ply', splat: 'application/splat', ksplat: 'application/ksplat', sog: 'application/sog',
};

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** What saving hands on to: the room, the level editor, and the scenes (a copy opens there). */
export interface SaveParts {
  actions: Actions;
  collab: Collab;
  level: LevelEditor;
  scenes: Scenes;
}

/** The Save, Publish and Duplicate buttons. */
export class Saving {
  constructor(
    private readonly ctx: EditorContext,
    private readonly parts: SaveParts,
  ) {
    const { ui } = ctx.panel;
    ui.save.addEventListener('click', () => parts.actions.run('save', () => this.save()));
    ui.publish.addEventListener('click', () => parts.actions.run('publish', () => this.publish()));
    ui.duplicate.addEventListener('click', () => parts.actions.run('duplicate', () => this.duplicate()));
  }

  /** The levelData Save writes: the edited one, with the current view as start camera when the
   * scene has none yet (a saved scene always opens where its editor looked). */
  private levelData(): LevelV1 {
    const { level } = this.ctx.state;
    return level.camera ? level : { ...level, camera: this.ctx.stage.orbit.get() };
  }

  /** The scene settings Save (and Publish) write, as the form shows them. */
  private settings(title: string) {
    const { ui } = this.ctx.panel;
    return {
      title, description: ui.description.value,
      allowComments: ui.allowComments.checked, allowReactions: ui.allowReactions.checked,
    };
  }

  private async save(): Promise<void> {
    const { panel, state } = this.ctx;
    const title = panel.ui.title.value.trim();
    if (!title) throw new Error('the title must not be empty');
    if (state.current) {
      await this.patchScene(state.current, { ...this.settings(title), levelData: this.levelData() });
      panel.say('Saved.');
      this.ctx.post('saved', {});
      return;
    }
    if (!state.pendingFile) throw new Error('pick a scene file first');
    const splat = await this.commitNew(state.pendingFile, title);
    state.pendingFile = null;
    document.documentElement.dataset.splatId = splat.id;
    this.savedAs(splat);
    this.parts.collab.join(splat.id);
    panel.say('Saved.');
    this.ctx.post('saved', { splatId: splat.id });
  }

  private async publish(): Promise<void> {
    const { panel, state } = this.ctx;
    const ui = panel.ui;
    if (!state.current) throw new Error('save the scene before publishing it');
    const title = ui.title.value.trim();
    if (!title) throw new Error('the title must not be empty');
    // The visibility the user picked, or public when they left it as stored. Publishing saves
    // every other change too: the room adopts the published scene, so nothing may stay unsaved.
    const picked = ui.visibility.value as Visibility;
    const visibility: Visibility = picked !== state.current.visibility ? picked : 'public';
    const splatId = state.current.id;
    await this.patchScene(state.current, { ...this.settings(title), levelData: this.levelData(), visibility });
    ui.visibility.value = visibility;
    panel.say(visibility === 'public' ? 'Published.' : 'Made private.');
    this.ctx.post('published', { splatId, visibility });
  }

  private async duplicate(): Promise<void> {
    if (!this.ctx.state.current) throw new Error('save the scene before duplicating it');
    const copy = await this.cloneOf(this.ctx.state.current.id);
    this.ctx.post('cloned', copy);
    await this.parts.scenes.openProject(copy.splatId, false);
    this.ctx.panel.say('Duplicated.');
  }

  /** Uploads the picked file and commits it as a new scene; returns the new scene, with the allow
   * toggles (which a commit does not take: it starts a scene with both on) and its thumbnail. */
  private async commitNew(file: File, title: string): Promise<Splat> {
    const { api, panel: { ui } } = this.ctx;
    const contentType = CONTENT_TYPES[formatOfName(file.name) ?? ''] ?? 'application/octet-stream';
    const { body: up } = await api.call('POST', '/api/embed/editor/uploads/splat-file', { fileName: file.name, contentType, fileSize: file.size });
    this.ctx.panel.say('Uploading…');
    await putSigned(up.uploadUrl, file, contentType);
    const { body } = await api.call('POST', '/api/embed/editor/splats', {
      title, description: ui.description.value, visibility: ui.visibility.value as Visibility,
      splatType: 'file', splatUrl: up.fileUrl, levelData: this.levelData(),
    });
    return this.patchScene(await api.splat(body.splatId), {
      allowComments: ui.allowComments.checked, allowReactions: ui.allowReactions.checked,
    });
  }

  /** A PATCH, sent again once when the server answers 409: another participant's save changed
   * the scene's stored objects while this one was planned, and the server asks to save again. */
  private async patchOnce(path: string, body: Record<string, unknown>): Promise<{ status: number; body: any }> {
    try {
      return await this.ctx.api.call('PATCH', path, body);
    } catch (err) {
      if (!(err instanceof ApiError && err.status === 409)) throw err;
      await sleep(250);
      return this.ctx.api.call('PATCH', path, body);
    }
  }

  /** PATCHes scene with body; the answer is the scene now (savedAs). A first save without an image
   * attaches a canvas thumbnail by a second PATCH that changes nothing else (others' edits stay unsaved). */
  private async patchScene(scene: Splat, body: Record<string, unknown>): Promise<Splat> {
    const { state } = this.ctx;
    const path = `/api/embed/editor/splats/${scene.id}`;
    const { body: res } = await this.patchOnce(path, body);
    let splat: Splat = { ...scene, ...res.splat };
    this.savedAs(splat);
    if (!splat.imageUrl) {
      try {
        const imageUrl = await uploadThumbnail(this.ctx.api, this.ctx.stage.canvas);
        if (imageUrl) {
          const { body: { splat: img } } = await this.patchOnce(path, { imageUrl });
          splat = { ...splat, imageUrl: img.imageUrl, updatedAt: img.updatedAt };
          if (state.current?.id === scene.id) state.current = { ...state.current, imageUrl: img.imageUrl, updatedAt: img.updatedAt };
        }
      } catch (err) {
        console.warn('splathost editor: the thumbnail could not be saved', err);
      }
    }
    return splat;
  }

  /** The scene as saved is ours now; the server announces it to the room once stored ('saved'). */
  private savedAs(splat: Splat): void {
    this.ctx.state.current = splat;
    this.ctx.state.level = readLevel(splat.levelData);
    this.parts.level.apply();
    this.ctx.state.setDirty(false);
  }

  /** Clones the scene: 201 at once, or a job polled until it finishes (429 resumes our own job). */
  private async cloneOf(sourceId: string): Promise<{ splatId: string; sourceSplatId: string }> {
    const { api } = this.ctx;
    let res: { status: number; body: any };
    try {
      res = await api.call('POST', `/api/embed/editor/splats/${sourceId}/clone`);
    } catch (err) {
      if (!(err instanceof ApiError && err.status === 429 && err.body.jobId && err.body.sourceSplatId === sourceId)) throw err;
      res = { status: 202, body: err.body };
    }
    const jobId: string | undefined = res.body.jobId;
    while (res.body.status !== 'success') {
      if (!jobId) throw new Error('the clone answered neither a scene nor a job');
      this.ctx.panel.say(`Duplicating… ${res.body.copiedObjects ?? 0}/${res.body.totalObjects ?? '?'}`);
      await sleep(1500);
      res = await api.call('GET', `/api/embed/editor/splats/${sourceId}/clone/${jobId}`);
    }
    return { splatId: res.body.splatId, sourceSplatId: res.body.sourceSplatId ?? sourceId };
  }
}
