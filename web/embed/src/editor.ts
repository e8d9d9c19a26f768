// The editor embed (/embed/editor): opens the session's scene or a blank canvas and edits all of
// it — title, description, visibility, the allow* toggles, and every levelData v1 field (start
// camera, orientation, background, exposure and tone mapping, annotations, audio) — together
// with everyone else who has the scene open (the multiplayer room, room.ts); uploads a picked
// file as a new scene, saves (with a thumbnail from the canvas on a scene's first save),
// publishes and duplicates, and reports every step to the host page (docs/embeds.md).
//
// This file only puts the editor together; each concern is a module of editor/ (panel, level
// editing, annotations, audio, the room, opening scenes, saving, host messages, the session),
// and what they share is the one EditorContext made here (its EditorState above all), handed to
// each.
import { Api, readBoot } from './api.ts';
import { Authority } from './authority.ts';
import { Actions } from './editor/actions.ts';
import { AnnotationsEditor } from './editor/annotations.ts';
import { AudioEditor } from './editor/audio.ts';
import { Collab } from './editor/collab.ts';
import type { EditorContext } from './editor/context.ts';
import { LevelEditor } from './editor/level-editor.ts';
import { HostLink } from './editor/messages.ts';
import { Panel } from './editor/panel.ts';
import { Saving } from './editor/save.ts';
import { Scenes } from './editor/scenes.ts';
import { Session } from './editor/session.ts';
import { EditorState, type SetLevelKey } from './editor/state.ts';
import { Stage, showError } from './stage.ts';

/** Builds the editor into the page and starts it: opens the boot's scene (or a blank canvas),
 * then tells the host it is ready. */
function startEditor(): void {
  const boot = readBoot();
  const api = new Api(boot.sessionToken);
  const host = new HostLink(new URLSearchParams(location.search));
  const post = host.post;
  const panel = new Panel(document.body);
  const stage = new Stage(panel.view);
  const state = new EditorState(new Authority(), (dirty) => post('dirtyChanged', { dirty }));
  const ctx: EditorContext = { api, stage, panel, state, post };
  const session = new Session(api, boot.scoped, post);
  const actions = new Actions(panel, session, post);

  // The parts are made in this order because each registers what follows the stage's frames and
  // the page's events in it (the room's markers before the hotspots, as the page always did).
  const collab = new Collab(ctx, (keys) => level.apply(keys));
  const level: LevelEditor = new LevelEditor(ctx, {
    changed: (fields) => collab.changed(fields),
    renderAnnotations: () => annotations.render(),
    renderAudio: () => audio.render(),
  });
  const setLevelKey: SetLevelKey = (key, value) => level.setKey(key, value);
  const annotations = new AnnotationsEditor(ctx, setLevelKey);
  const audio = new AudioEditor(ctx, actions, setLevelKey);
  const scenes = new Scenes(ctx, { collab, level, annotations, audio, actions });
  new Saving(ctx, { actions, collab, level, scenes });

  host.listen({
    openProject: (splatId) => void scenes.openProject(splatId, true),
    createProject: () => scenes.createProject(),
    updateSession: (token) => session.update(token, (changed) => collab.rejoin(changed)),
  });

  const start = async () => {
    session.armExpiry(boot.expiresAt);
    level.apply();
    if (boot.splatId) await scenes.openProject(boot.splatId, true);
    else scenes.blank();
    post('ready', null);
  };
  start().catch((err) => {
    console.error('splathost editor:', err);
    showError(`The editor could not start: ${err instanceof Error ? err.message : String(err)}`);
    post('error', { message: String(err) });
  });
}

startEditor();
