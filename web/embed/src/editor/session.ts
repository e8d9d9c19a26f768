// The editor's session: whether it acts for a customer (scoped), its expiry warning, and the
// host's replacement of its token (updateSession).
import type { Api } from '../api.ts';
import { rightsChanged } from '../authority.ts';
import type { Post } from './messages.ts';

interface Claims {
  integrationId?: string;
  externalUserId?: string;
  exp?: number;
}

/** The token's claims, unverified: the server checks the signature, the editor only needs to
 * know its integration, scope and expiry. */
function claimsOf(token: string): Claims | null {
  try {
    const b64 = token.split('.')[1].replace(/-/g, '+').replace(/_/g, '/');
    return JSON.parse(atob(b64.padEnd(Math.ceil(b64.length / 4) * 4, '=')));
  } catch {
    return null;
  }
}

/** The session the editor calls the API with. */
export class Session {
  private expiryTimer = 0;

  /** scoped: the boot's (a session of a customer, not a guest). */
  constructor(
    private readonly api: Api,
    public scoped: boolean,
    private readonly post: Post,
  ) {}

  /** Posts sessionExpiring about a minute before the session ends. */
  armExpiry(expiresAt: string): void {
    clearTimeout(this.expiryTimer);
    const at = Date.parse(expiresAt);
    if (!Number.isFinite(at)) return;
    this.expiryTimer = window.setTimeout(() => this.post('sessionExpiring', { expiresAt }), Math.max(0, at - Date.now() - 60_000));
  }

  /** Takes the host's new token, unless it is none or of another integration; rejoin is told
   * whether the new token may have other rights in the room. */
  update(token: unknown, rejoin: (rightsChanged: boolean) => void): void {
    const next = typeof token === 'string' ? claimsOf(token) : null;
    const current = claimsOf(this.api.token);
    if (!next || typeof next.exp !== 'number') {
      this.post('error', { message: 'updateSession: not a session token' });
      return;
    }
    if (current?.integrationId && next.integrationId !== current.integrationId) {
      this.post('error', { message: 'updateSession: the token belongs to another integration' });
      return;
    }
    this.api.token = token as string;
    this.scoped = !!next.externalUserId;
    rejoin(rightsChanged(current, next));
    this.armExpiry(new Date(next.exp * 1000).toISOString());
  }
}
