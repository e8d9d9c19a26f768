// What one editor holds about the scene it edits, shared by its modules through this one object
// (each module gets it from the editor that owns it; none keeps a copy).
import type { Splat } from '../api.ts';
import type { Authority } from '../authority.ts';
import { type LevelV1, readLevel } from '../level.ts';

/** Sets (or with undefined removes) one top-level levelData key as a local edit. */
export type SetLevelKey = <K extends keyof LevelV1 & string>(key: K, value: LevelV1[K] | undefined) => void;

/** The open scene, the picked file, the levelData being edited and whether it is saved. */
export class EditorState {
  /** The open scene as last loaded or saved (null on a blank canvas). */
  current: Splat | null = null;
  /** A picked file not yet uploaded (it is uploaded on save). */
  pendingFile: File | null = null;
  /** The levelData being edited (v1; what Save writes). */
  level: LevelV1 = readLevel(null);
  private dirty = false;

  /** onDirtyChanged hears every change of the dirty flag (the host's dirtyChanged). */
  constructor(
    readonly authority: Authority,
    private readonly onDirtyChanged: (dirty: boolean) => void,
  ) {}

  /** Whether something is unsaved; `<html data-dirty>` says it on every call. */
  setDirty(next: boolean): void {
    document.documentElement.dataset.dirty = String(next);
    if (next === this.dirty) return;
    this.dirty = next;
    this.onDirtyChanged(next);
  }

  /** Whether there is a scene to edit (an open one or a picked file) that this session may change. */
  editing(): boolean {
    return !!(this.current || this.pendingFile) && !this.authority.isReadOnly;
  }
}
