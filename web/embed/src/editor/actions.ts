// The editor's cloud actions (save, publish, duplicate, uploads): one at a time with the buttons
// disabled, refused to a guest, and each failure turned into the host's matching event.
import { ApiError } from '../api.ts';
import type { Post } from './messages.ts';
import type { Panel } from './panel.ts';
import type { Session } from './session.ts';

/** Runs the editor's cloud actions. */
export class Actions {
  private busy = false;

  constructor(
    private readonly panel: Panel,
    private readonly session: Session,
    private readonly post: Post,
  ) {}

  private setBusy(next: boolean): void {
    this.busy = next;
    const ui = this.panel.ui;
    for (const b of [ui.save, ui.publish, ui.duplicate]) b.disabled = next;
  }

  /** Turns a failed call into the matching event (authRequired, limitReached or error). Always
   * returns true, so a caller can `return failed(...)`. */
  failed(err: unknown, action: string): true {
    const say = (m: string) => this.panel.say(m, 'error');
    if (err instanceof ApiError) {
      const b = err.body;
      if (err.status === 403 && err.code === 'AUTH_REQUIRED') {
        say('Sign in to ' + action + ' this scene.');
        this.post('authRequired', { action, message: err.message });
        return true;
      }
      if (err.status === 413 && err.code === 'STORAGE_QUOTA_EXCEEDED') {
        say('There is not enough storage left for this.');
        this.post('limitReached', {
          dimension: 'storageBytes', scope: b.scope === 'account' ? 'account' : 'customer',
          usedBytes: Number(b.usedBytes), limitBytes: Number(b.limitBytes),
          ...(typeof b.requestedBytes === 'number' ? { requestedBytes: b.requestedBytes } : {}),
        });
        return true;
      }
      if (err.status === 403 && err.code === 'plan_limit' && b.dimension === 'splatCount') {
        say('The scene limit has been reached.');
        this.post('limitReached', {
          dimension: 'splatCount', scope: b.scope === 'account' ? 'account' : 'customer',
          usedBytes: Number(b.current), limitBytes: Number(b.limit), requestedBytes: 1,
        });
        return true;
      }
    }
    const message = err instanceof Error ? err.message : String(err);
    say(`Could not ${action}: ${message}`);
    this.post('error', { message });
    return true;
  }

  /** A guest session (no customer) may not act on the cloud: the host must sign the user in. */
  private guest(action: string): boolean {
    if (this.session.scoped) return false;
    this.panel.say('Sign in to ' + action + ' this scene.', 'error');
    this.post('authRequired', { action, message: 'this action needs a signed-in user' });
    return true;
  }

  /** Runs one cloud action at a time, with the buttons disabled. */
  run(name: string, fn: () => Promise<void>): void {
    if (this.busy || this.guest(name)) return;
    this.setBusy(true);
    this.panel.say('');
    fn()
      .catch((err) => this.failed(err, name))
      .finally(() => this.setBusy(false));
  }
}
