// What the room's authority means for the editor page (docs/embeds.md, "Multiplayer room";
// docs/security.md, "A server-authoritative room"). The server decides who may change the scene
// (a session of its owner, or one the integrator minted with coEdit) and says so in the
// welcome: any other participant sees the scene, the others and their changes live, but is
// offered no control that would change it. And the server alone announces a save, once stored:
// the editor adopts an announced scene only when it is newer than the one it holds.

/** The controls that change the scene: the scene, annotation and audio sections, the view's
 * start camera, orientation and look, Save and Publish. "Go to start camera" and Duplicate (a
 * copy is the visitor's own) stay. */
const EDITING = [
  '[data-section=scene]', '[data-section=annotations]', '[data-section=audio]',
  '[data-action=set-start-camera]', '[data-action=flip]', '[data-action=rotate]',
  'input[name=background]', 'input[name=exposure]', 'select[name=toneMapping]',
  '[data-action=save]', '[data-action=publish]',
].join(', ');

/** What the notice says to a read-only participant. */
export const READ_ONLY_NOTICE = 'View only: the scene’s owner, and people the site invites to co-edit, can change it. You see their changes live.';

/** Whether this editor may change the scene, as the room's welcome said: read-only makes the
 * editing controls inert (not focusable, not clickable, dimmed) and shows the notice.
 * `<html data-read-only>` says which. */
export class Authority {
  private readOnly = false;
  private notice: HTMLElement | null = null;

  /** Whether the editor is read-only now (the room takes no edits from this session). */
  get isReadOnly(): boolean {
    return this.readOnly;
  }

  /** Makes the editing controls under root inert and shows the notice, or makes them editable
   * again. */
  setReadOnly(next: boolean, root: ParentNode = document): void {
    this.readOnly = next;
    document.documentElement.dataset.readOnly = String(next);
    for (const el of root.querySelectorAll<HTMLElement>(EDITING)) el.inert = next;
    if (next && !this.notice) {
      this.notice = document.createElement('p');
      this.notice.className = 'splathost-read-only';
      this.notice.setAttribute('role', 'note');
      this.notice.textContent = READ_ONLY_NOTICE;
      root.querySelector('.splathost-presence')?.after(this.notice);
    }
    if (this.notice) this.notice.hidden = !next;
  }
}

/** Whether a saved scene the room announced is newer than the one held (by updatedAt): the
 * saver already holds its own save's answer, and an announcement overtaken by a later save
 * must not bring back the older scene. Without both times it is taken as newer. */
export function isNewerSave(saved: Record<string, unknown>, held: Record<string, unknown>): boolean {
  const a = typeof saved.updatedAt === 'string' ? Date.parse(saved.updatedAt) : NaN;
  const b = typeof held.updatedAt === 'string' ? Date.parse(held.updatedAt) : NaN;
  return !(Number.isFinite(a) && Number.isFinite(b)) || a > b;
}

/** The claims the room's rights depend on. */
export interface RightsClaims {
  externalUserId?: string;
  coEdit?: boolean;
}

/** Whether a replaced session token may have other rights in the room (another customer, or
 * the co-edit grant given or taken): the room is joined again so its welcome says. */
export function rightsChanged(before: RightsClaims | null, after: RightsClaims | null): boolean {
  return (before?.externalUserId ?? '') !== (after?.externalUserId ?? '') || !!before?.coEdit !== !!after?.coEdit;
}
