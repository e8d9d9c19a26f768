// The scene's multiplayer room from the editor's side (room.ts is the connection): who is here
// and where they look (presence), our edits out, everyone else's edits and saves in.
import type { Splat } from '../api.ts';
import { isNewerSave } from '../authority.ts';
import { readLevel } from '../level.ts';
import { Presence } from '../presence.ts';
import { Room, type RoomFields } from '../room.ts';
import type { EditorContext } from './context.ts';

/** Makes the stage and the panel show the state's levelData (only the keys given, or all). */
export type ApplyLevel = (keys?: string[]) => void;

/** The editor's room: joined for the open scene, none for a new or blank one. */
export class Collab {
  private room: Room | null = null;
  private readonly presence: Presence;
  /** The camera last sent to the room, as JSON ('' sends the next frame's). */
  private sharedView = '';

  constructor(
    private readonly ctx: EditorContext,
    private readonly applyLevel: ApplyLevel,
  ) {
    const { stage, panel } = ctx;
    this.presence = new Presence(panel.ui.presence, panel.markers, (p) => {
      const at = stage.project(p);
      return at.behind || at.x < 0 || at.y < 0 || at.x > stage.canvas.clientWidth || at.y > stage.canvas.clientHeight ? null : at;
    });
    // After every frame the engine draws: the markers follow our camera, and the others see where
    // we look (an orbit, a flight to an annotation or the start camera alike; the room sends it at
    // most 5 times a second).
    stage.onFrame(() => {
      this.presence.update();
      const cam = stage.orbit.get();
      const key = JSON.stringify(cam);
      if (this.room && key !== this.sharedView) {
        this.sharedView = key;
        this.room.camera(cam);
      }
    });
  }

  /** Joins the room of the open scene (one room per scene; a new or blank scene has none). */
  join(splatId: string | null): void {
    if (this.room?.splatId === splatId) return;
    this.room?.close();
    this.room = null;
    this.presence.clear();
    this.ctx.state.authority.setReadOnly(false);
    this.ctx.panel.ui.presence.dataset.roomState = 'none';
    if (!splatId) return;
    const { presence } = this;
    this.room = new Room({
      splatId,
      token: () => this.ctx.api.token,
      handlers: {
        welcome: (self, peers, draft, _seq, canEdit) => {
          presence.reset(self, peers);
          this.ctx.state.authority.setReadOnly(!canEdit);
          // The room's unsaved changes (someone edited before we came, or while we were away).
          if (Object.keys(draft).length > 0) this.applyRemote(draft);
        },
        join: (peer) => {
          presence.join(peer);
          // Cameras are not part of a welcome: the newcomer learns where we look from us.
          this.sharedView = '';
        },
        leave: (id) => presence.leave(id),
        edit: (_from, fields) => this.applyRemote(fields),
        camera: (from, cam) => presence.camera(from, cam),
        saved: (splat) => this.adoptSaved(splat as Splat),
        state: (state, code) => {
          this.ctx.panel.ui.presence.dataset.roomState = state;
          if (state === 'refused') {
            presence.clear();
            console.warn(`splathost editor: the room refused this session (${code})`);
          }
        },
      },
    });
    // Our own marker for the others, from where we look now (sent after the welcome).
    this.sharedView = '';
  }

  /** After a new session token: a room that refused the old one (expired, 4401) is tried again
   * with the new one, as is one whose rights the new token may change (another customer,
   * coEdit): its welcome says. */
  rejoin(rightsChanged: boolean): void {
    if (this.room && (this.room.state === 'refused' || rightsChanged)) this.room.reconnect();
  }

  /** Tells the room where we look now. */
  camera(): void {
    this.room?.camera(this.ctx.stage.orbit.get());
  }

  /** Shares a local change with the room and marks the scene dirty. */
  changed(fields: RoomFields): void {
    this.ctx.state.setDirty(true);
    this.room?.edit(fields);
  }

  /** Applies someone else's edit (or the room's draft) to the form and the stage; it is an
   * unsaved change here too. */
  private applyRemote(fields: RoomFields): void {
    const ui = this.ctx.panel.ui;
    if (fields.title !== undefined) ui.title.value = fields.title;
    if (fields.description !== undefined) ui.description.value = fields.description;
    if (fields.visibility !== undefined) ui.visibility.value = fields.visibility;
    if (typeof fields.allowComments === 'boolean') ui.allowComments.checked = fields.allowComments;
    if (typeof fields.allowReactions === 'boolean') ui.allowReactions.checked = fields.allowReactions;
    if (fields.levelData) {
      // A key sent as null was removed; every other key replaces ours wholesale.
      const next: Record<string, unknown> = { ...this.ctx.state.level };
      for (const [k, v] of Object.entries(fields.levelData)) {
        if (v === null) delete next[k];
        else next[k] = v;
      }
      this.ctx.state.level = readLevel(next);
      // The start camera changes with everyone's edits; our own view stays where we put it.
      this.applyLevel(Object.keys(fields.levelData));
    }
    this.ctx.state.setDirty(true);
  }

  /** The server stored someone's save or publish: that scene is the one now, nothing is unsaved. */
  private adoptSaved(splat: Splat): void {
    const { state } = this.ctx;
    if (!state.current || splat.id !== state.current.id || !isNewerSave(splat, state.current)) return;
    if ((splat as { levelData?: unknown }).levelData === undefined) {
      // Too large for the room's frame: the saver sent the scene without it; read it back.
      void this.ctx.api.splat(splat.id).then((s) => this.adoptSaved(s), (err) => console.warn('splathost editor: could not read the saved scene', err));
      return;
    }
    state.current = { ...state.current, ...splat };
    this.ctx.panel.fill(state.current);
    state.level = readLevel(state.current.levelData);
    this.applyLevel();
    state.setDirty(false);
  }
}
