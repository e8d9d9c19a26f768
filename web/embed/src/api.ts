// The embed page's boot data and its session-bearer API (docs/embeds.md).

import type { Processing } from './engine.ts';

export interface Boot {
  kind: 'viewer' | 'editor';
  sessionToken: string;
  expiresAt: string;
  splatId: string | null;
  scoped: boolean;
  capabilities: string[];
  user: { name: string; avatarUrl: string | null } | null;
}

/** The single-scene shape (GET /api/embed/splats/{id}), as far as the embeds read it. */
export interface Splat {
  id: string;
  title: string;
  description: string;
  visibility: 'private' | 'public';
  splatType: 'file' | 'lod';
  splatUrl: string;
  imageUrl?: string | null;
  levelData: Record<string, unknown> | null;
  /** The scene's rendition; the embeds load it once ready. */
  processing?: Processing | null;
  [key: string]: unknown;
}

/** The scene record the page's first script (boot.ts) requested before the page's module ran. */
export interface PrefetchedScene {
  path: string;
  /** The session token it was requested with. */
  token: string;
  response: Promise<Response>;
}

declare global {
  interface Window {
    /** Set by boot.ts, taken by the page's first Api.splat. */
    splathostScene?: PrefetchedScene;
  }
}

/** Reads the boot JSON the page carries in <script id="splathost-boot">. */
export function readBoot(): Boot {
  const el = document.getElementById('splathost-boot');
  if (!el || !el.textContent) throw new Error('this page carries no boot data');
  const boot = JSON.parse(el.textContent) as Boot;
  if (!boot || typeof boot.sessionToken !== 'string') throw new Error('the boot data has no session');
  return boot;
}

/** A failed API call, with the error envelope's fields (status, code, scope, ...). */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly body: Record<string, any>,
  ) {
    super(typeof body.message === 'string' && body.message ? body.message : `request failed (${status})`);
  }
  get code(): string | undefined {
    return typeof this.body.code === 'string' ? this.body.code : undefined;
  }
}

/** Calls the gateway with the session bearer; the token can be replaced (updateSession). */
export class Api {
  constructor(public token: string) {}

  async call<T = any>(method: string, path: string, body?: unknown): Promise<{ status: number; body: T }> {
    const headers: Record<string, string> = { Authorization: `Bearer ${this.token}` };
    if (body !== undefined) headers['Content-Type'] = 'application/json';
    const resp = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
    return readAnswer<T>(resp);
  }

  async splat(id: string): Promise<Splat> {
    const path = `/api/embed/splats/${encodeURIComponent(id)}`;
    // The page's first read of a scene only: any later one (after a save, say) must see the
    // scene as it is now, not as it was when the page loaded.
    const pre = window.splathostScene;
    window.splathostScene = undefined;
    if (pre && pre.path === path && pre.token === this.token) {
      const { body } = await readAnswer<{ splat: Splat }>(await pre.response);
      return body.splat;
    }
    const { body } = await this.call<{ splat: Splat }>('GET', path);
    return body.splat;
  }
}

/** An API answer's status and parsed body; an error envelope throws as an ApiError. */
async function readAnswer<T>(resp: Response): Promise<{ status: number; body: T }> {
  const text = await resp.text();
  let parsed: any = {};
  try {
    parsed = text ? JSON.parse(text) : {};
  } catch {
    parsed = { message: text.slice(0, 200) };
  }
  if (!resp.ok) throw new ApiError(resp.status, parsed ?? {});
  return { status: resp.status, body: parsed as T };
}

const VISITOR_KEY = 'splathost.visitorId';

/** The anonymous per-browser id for view counting: kept in localStorage, or per page when
 * storage is unavailable (third-party iframes may have it blocked). */
export function visitorId(): string {
  const fresh = () => crypto.randomUUID();
  try {
    let id = localStorage.getItem(VISITOR_KEY);
    if (!id) {
      id = fresh();
      localStorage.setItem(VISITOR_KEY, id);
    }
    return id;
  } catch {
    return fresh();
  }
}

/** Sends the one view beacon of a scene load; a lost beacon never disturbs the viewer. */
export function sendView(api: Api, splatId: string): void {
  api.call('POST', '/api/embed/views', { splatId, visitorId: visitorId() }).catch((err) => {
    console.warn('splathost: view beacon failed', err);
  });
}
