// The splathost REST client: the Go SDK's calls (sdk/go), over fetch only, for Node >= 20 and browsers.
import { ErrorCodes, SplathostError } from './errors.ts';
import { AttemptFailure, DEFAULT_RETRY_POLICY, retryAfterMs, sleep, withRetry, type RetryPolicy } from './retry.ts';
import type * as T from './types.ts';
import * as U from './uploads.ts';

/** Options of a {@link Splathost} client. */
export interface ClientOptions {
  /** The deployment, e.g. "https://api.example.com". */
  baseUrl: string;
  /** The integration's public key (mpk_). */
  publicKey?: string;
  /** The integration's secret key (msk_): on the integrator's server only, never in a browser. */
  secretKey?: string;
  /** The operator's admin token, which the renditions calls send. */
  adminToken?: string;
  /** Replaces {@link DEFAULT_RETRY_POLICY}; `{ ...DEFAULT_RETRY_POLICY, maxAttempts: 1 }` disables retries. */
  retry?: RetryPolicy;
  /** Replaces the global fetch (tests, instrumentation, a proxy agent). */
  fetch?: typeof fetch;
  /** Sent as User-Agent where the runtime allows it (browsers do not). */
  userAgent?: string;
}

/** Options of one call. */
export interface CallOptions {
  /** Aborts the request and any wait between its attempts. */
  signal?: AbortSignal;
  /**
   * The Idempotency-Key of a call that creates or changes things (commitSplat, startClone, the
   * upload requests, putCustomer, deleteCustomer). Without it each call sends a random key, the
   * same on each of its retries; choose one to make an operation safe across process restarts.
   */
  idempotencyKey?: string;
}

/** Which credential a request carries. */
type Auth = 'keys' | 'secret' | 'admin';

/** One API request. */
interface Call {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  path: string;
  query?: Record<string, string | number | boolean | undefined>;
  auth?: Auth;
  /** The X-Service-External-User-Id; none when absent. */
  eu?: string;
  body?: unknown;
  headers?: Record<string, string>;
  /** A POST whose repetition has no second effect: retried like the idempotent methods. */
  safe?: boolean;
  /** A route that honours Idempotency-Key: one key on every attempt, so it is retried, and a 409 IDEMPOTENCY_KEY_IN_USE is waited out. */
  keyed?: boolean;
}

/** A random 128-bit key, hex. */
function randomKey(): string {
  const b = new Uint8Array(16);
  globalThis.crypto.getRandomValues(b);
  return Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');
}

/**
 * One path segment, escaped (ids are hex, but a caller's typo must not change the route). "." and
 * ".." are escaped whole: as they are, they are dot segments, which the gateway refuses.
 */
export function pathEscape(s: string): string {
  return s === '.' || s === '..' ? '%2E'.repeat(s.length) : encodeURIComponent(s);
}

/** A page fetcher of {@link pages}: the items and the next cursor ('' on the last page). */
type PageFetch<I> = (cursor: string) => Promise<{ items: I[]; next: string }>;

/**
 * Every item of a cursor-paged list: a page is fetched only when the loop reaches it, and none
 * after the loop breaks. A page that fails throws from the loop.
 */
export async function* pages<I>(cursor: string, fetchPage: PageFetch<I>): AsyncGenerator<I, void, undefined> {
  for (;;) {
    const { items, next } = await fetchPage(cursor);
    yield* items;
    if (!next) return;
    if (next === cursor) throw new Error(`splathost: the service answered the cursor ${JSON.stringify(cursor)} it was sent as the next one`);
    cursor = next;
  }
}

/** A client of one splathost deployment; safe to share. The calls are those of the Go SDK (sdk/go/README.md). */
export class Splathost {
  /** The deployment's base URL, without a trailing slash. */
  readonly baseUrl: string;
  readonly #opts: ClientOptions;
  readonly #fetch: typeof fetch;
  readonly #retry: RetryPolicy;

  constructor(options: ClientOptions) {
    let u: URL;
    try { u = new URL(options.baseUrl); } catch { u = new URL('invalid:'); }
    if ((u.protocol !== 'http:' && u.protocol !== 'https:') || u.host === '') {
      throw new Error(`splathost: base URL ${JSON.stringify(options.baseUrl)} must be an absolute http(s) URL`);
    }
    this.baseUrl = options.baseUrl.replace(/\/+$/, '');
    this.#opts = options;
    this.#fetch = options.fetch ?? globalThis.fetch.bind(globalThis);
    this.#retry = options.retry ?? DEFAULT_RETRY_POLICY;
  }

  /** The client's retry policy, which uploads share. */
  get retryPolicy(): RetryPolicy { return this.#retry; }

  /** Sends c with its retries and returns the parsed 2xx answer (undefined when it has no body). */
  async request<R>(c: Call, o: CallOptions = {}): Promise<R> {
    let url = this.baseUrl + c.path;
    const q = new URLSearchParams();
    for (const [k, v] of Object.entries(c.query ?? {})) if (v !== undefined && v !== '' && v !== false) q.set(k, String(v));
    if ([...q].length > 0) url += '?' + q.toString();
    const headers: Record<string, string> = { Accept: 'application/json', ...this.#authHeaders(c.auth ?? 'keys') };
    if (c.body !== undefined) headers['Content-Type'] = 'application/json';
    if (this.#opts.userAgent) headers['User-Agent'] = this.#opts.userAgent;
    if (c.eu) headers['X-Service-External-User-Id'] = c.eu;
    if (c.keyed) headers['Idempotency-Key'] = o.idempotencyKey || randomKey();
    Object.assign(headers, c.headers);
    const payload = c.body === undefined ? undefined : JSON.stringify(c.body);
    const retryable = c.method !== 'POST' || c.safe === true || c.keyed === true;
    return withRetry(this.#retry, o.signal, async () => {
      let resp: Response;
      let text: string;
      try {
        resp = await this.#fetch(url, { method: c.method, headers, body: payload, signal: o.signal });
        text = await resp.text();
      } catch (err) {
        throw new AttemptFailure(err, retryable);
      }
      if (resp.ok) return (text ? JSON.parse(text) : undefined) as R;
      const e = SplathostError.fromAnswer(resp.status, resp.headers, text);
      // A rate limit's refusal did nothing, so any call may be sent again after it.
      if (resp.status === 429 && e.code === ErrorCodes.RateLimited) throw new AttemptFailure(e, true, retryAfterMs(resp.headers));
      if (resp.status >= 500) throw new AttemptFailure(e, retryable, retryAfterMs(resp.headers));
      if (c.keyed && resp.status === 409 && e.code === ErrorCodes.IdempotencyKeyInUse) {
        throw new AttemptFailure(e, true, retryAfterMs(resp.headers));
      }
      throw e;
    });
  }

  #authHeaders(auth: Auth): Record<string, string> {
    const { secretKey = '', publicKey = '', adminToken = '' } = this.#opts;
    switch (auth) {
      case 'admin': return { Authorization: `Bearer ${adminToken}` };
      case 'secret': return { Authorization: `Bearer ${secretKey}` };
      default: return { Authorization: `Bearer ${secretKey}`, 'X-Service-Public-Key': publicKey };
    }
  }

  /**
   * PUTs a body to a signed URL with its retries (after a 5xx or a network error: a PUT is
   * repeatable) and returns the answer's headers. A refusal is a SplathostError with code ''.
   */
  async putSigned(url: string, body: Blob, headers: Record<string, string>, o: CallOptions = {}): Promise<Headers> {
    return withRetry(this.#retry, o.signal, async () => {
      let resp: Response;
      try {
        resp = await this.#fetch(url, { method: 'PUT', headers, body, signal: o.signal });
      } catch (err) {
        throw new AttemptFailure(err, true);
      }
      const text = await resp.text().catch(() => '');
      if (resp.ok) return resp.headers;
      const e = new SplathostError(resp.status, `upload PUT refused: HTTP ${resp.status}`, { body: text });
      throw new AttemptFailure(e, resp.status >= 500, retryAfterMs(resp.headers));
    });
  }

  // Customers.

  /** Creates or updates the customer of an external user id (PUT /api/v1/external-user). */
  async putCustomer(externalUserId: string, update: T.CustomerUpdate = {}, o?: CallOptions): Promise<T.ExternalUser> {
    const r = await this.request<{ externalUser: T.ExternalUser }>({ method: 'PUT', path: '/api/v1/external-user', eu: externalUserId, body: update, keyed: true }, o);
    return r.externalUser;
  }

  /** The customer of an external user id; a 404 CUSTOMER_NOT_PROVISIONED when there is none. */
  async getCustomer(externalUserId: string, o?: CallOptions): Promise<T.ExternalUser> {
    const r = await this.request<{ externalUser: T.ExternalUser }>({ method: 'GET', path: '/api/v1/external-user', eu: externalUserId }, o);
    return r.externalUser;
  }

  /** Deletes a customer and its scenes. */
  deleteCustomer(externalUserId: string, o?: CallOptions): Promise<T.DeleteCustomerResult> {
    return this.request({ method: 'DELETE', path: '/api/v1/external-user', eu: externalUserId, keyed: true }, o);
  }

  /** A customer's allocation and what it uses. */
  async customerUsage(externalUserId: string, o?: CallOptions): Promise<T.CustomerUsage> {
    const r = await this.request<{ usage: T.CustomerUsage }>({ method: 'GET', path: '/api/v1/external-user/usage', eu: externalUserId }, o);
    return r.usage;
  }

  // Scenes.

  /** One page of scenes; follow `nextCursor`, or loop over {@link allSplats}. */
  listSplats(l: T.ListSplatsOptions = {}, o?: CallOptions): Promise<T.SplatPage> {
    return this.request({ method: 'GET', path: '/api/v1/splats', eu: l.externalUserId,
      query: { limit: l.limit, cursor: l.cursor, featured: l.featured, sort: l.sort, dir: l.dir } }, o);
  }

  /** Every scene, page after page (`limit` is the page size): `for await (const s of client.allSplats({...}))`. */
  allSplats(l: T.ListSplatsOptions = {}, o?: CallOptions): AsyncGenerator<T.Splat, void, undefined> {
    return pages(l.cursor ?? '', async (cursor) => {
      const p = await this.listSplats({ ...l, cursor }, o);
      return { items: p.splats, next: p.nextCursor ?? '' };
    });
  }

  /** One scene. */
  async getSplat(externalUserId: string, splatId: string, o?: CallOptions): Promise<T.Splat> {
    const r = await this.request<{ splat: T.Splat }>({ method: 'GET', path: '/api/v1/splats/' + pathEscape(splatId), eu: externalUserId }, o);
    return r.splat;
  }

  /** Changes a scene's fields; absent ones are left as they are. */
  async patchSplat(externalUserId: string, splatId: string, patch: T.SplatPatch, o?: CallOptions): Promise<T.Splat> {
    const r = await this.request<{ splat: T.Splat }>({ method: 'PATCH', path: '/api/v1/splats/' + pathEscape(splatId), eu: externalUserId, body: patch }, o);
    return r.splat;
  }

  /** Deletes a scene. */
  async deleteSplat(externalUserId: string, splatId: string, o?: CallOptions): Promise<void> {
    await this.request({ method: 'DELETE', path: '/api/v1/splats/' + pathEscape(splatId), eu: externalUserId }, o);
  }

  /** Commits an uploaded file or folder as a scene (keyed: a retry replays the first answer). */
  commitSplat(externalUserId: string, r: T.CommitRequest, o?: CallOptions): Promise<T.CommitResult> {
    return this.request({ method: 'POST', path: '/api/v1/splats', eu: externalUserId, body: r, keyed: true }, o);
  }

  /** The integration's most viewed public scenes over a window (one ranked answer, no cursor). */
  trendingSplats(t: T.TrendingOptions = {}, o?: CallOptions): Promise<T.Trending> {
    return this.request({ method: 'GET', path: '/api/v1/splats/trending', query: { window: t.windowDays, limit: t.limit } }, o);
  }

  /** The trending scenes as an async iterator, for a loop like the others (one call). */
  allTrendingSplats(t: T.TrendingOptions = {}, o?: CallOptions): AsyncGenerator<T.TrendingSplat, void, undefined> {
    return pages('', async () => ({ items: (await this.trendingSplats(t, o)).splats, next: '' }));
  }

  /** A scene's impressions and unique viewers per day over the last windowDays (1-90, default 30). */
  async splatAnalytics(externalUserId: string, splatId: string, windowDays?: number, o?: CallOptions): Promise<T.Analytics> {
    const r = await this.request<{ analytics: T.Analytics }>({ method: 'GET', path: '/api/v1/splats/' + pathEscape(splatId) + '/analytics',
      eu: externalUserId, query: { window: windowDays } }, o);
    return r.analytics;
  }

  // Uploads.

  /** Uploads a scene file and commits it: one PUT below the multipart threshold, resumable parts from it. */
  uploadFile(externalUserId: string, file: U.UploadBody, o?: U.UploadOptions): Promise<T.CommitResult> {
    return U.uploadFile(this, externalUserId, file, o);
  }

  /** Uploads (or resumes, with `uploadId`) a file in parts and completes it; resolves with the fileUrl to commit. */
  uploadParts(externalUserId: string, file: U.UploadBody, o?: U.UploadOptions): Promise<string> {
    return U.uploadParts(this, externalUserId, file, o);
  }

  /** Requests a signed single-PUT URL (up to 2 GiB). */
  requestFileUpload(externalUserId: string, r: T.FileUploadRequest, o?: CallOptions): Promise<T.FileUpload> {
    return U.requestFileUpload(this, externalUserId, r, o);
  }

  /** Requests one signed URL per file of a LOD folder (keyed). */
  requestFolderUpload(externalUserId: string, files: T.FolderFile[], o?: CallOptions): Promise<T.FolderUpload> {
    return this.request({ method: 'POST', path: '/api/v1/uploads/lod-folder', eu: externalUserId, body: { files }, keyed: true }, o);
  }

  /** Requests signed URLs for a scene's thumbnail and depth images (keyed). */
  requestImageUploads(externalUserId: string, r: T.ImageUploadRequest, o?: CallOptions): Promise<T.ImageUploads> {
    return this.request({ method: 'POST', path: '/api/v1/uploads/splat-images', eu: externalUserId, body: r, keyed: true }, o);
  }

  /** PUTs a body to a signed single-PUT URL with the headers it was signed with. */
  putObject(uploadUrl: string, contentType: string, body: Blob, o?: CallOptions): Promise<void> {
    return U.putObject(this, uploadUrl, contentType, body, o);
  }

  /** Starts a multipart upload (from 5 MiB). */
  startMultipartUpload(externalUserId: string, r: T.FileUploadRequest, o?: CallOptions): Promise<T.MultipartUpload> {
    return U.startMultipartUpload(this, externalUserId, r, o);
  }

  /** Where a multipart upload stands (resume). */
  getMultipartUpload(externalUserId: string, uploadId: string, o?: CallOptions): Promise<T.MultipartStatus> {
    return U.getMultipartUpload(this, externalUserId, uploadId, o);
  }

  /** PUTs one part; resolves with its ETag. */
  putPart(uploadUrl: string, part: Blob, o?: CallOptions): Promise<string> {
    return U.putPart(this, uploadUrl, part, o);
  }

  /** Joins the parts into the file; resolves with its fileUrl. */
  completeMultipartUpload(externalUserId: string, uploadId: string, parts: T.CompletedPart[], o?: CallOptions): Promise<string> {
    return U.completeMultipartUpload(this, externalUserId, uploadId, parts, o);
  }

  /** Abandons a multipart upload. */
  abortMultipartUpload(externalUserId: string, uploadId: string, o?: CallOptions): Promise<void> {
    return U.abortMultipartUpload(this, externalUserId, uploadId, o);
  }

  // Sessions.

  /** Mints an embed session (viewer or editor); safe to retry (an extra token is simply unused). */
  mintSession(r: T.SessionRequest, o?: CallOptions): Promise<T.Session> {
    const { externalUserId, ...body } = r;
    return this.request({ method: 'POST', path: '/api/editor/embed-sessions', auth: 'secret', eu: externalUserId,
      body: { ...body, publicKey: body.publicKey ?? this.#opts.publicKey }, safe: true }, o);
  }

  // Clones.

  /**
   * Starts a clone of a scene into the customer's library: the result when it finished within the
   * request, else the running job to poll. `respondAsync` answers 202 at once; `waitSeconds` sends Prefer: wait=N.
   */
  async startClone(externalUserId: string, splatId: string, c: CloneOptions = {}, o?: CallOptions): Promise<CloneStep> {
    const headers: Record<string, string> = {};
    if (c.respondAsync) headers['Prefer'] = 'respond-async';
    else if (c.waitSeconds) headers['Prefer'] = `wait=${Math.floor(c.waitSeconds)}`;
    const a = await this.request<CloneAnswer>({ method: 'POST', path: '/api/v1/splats/' + pathEscape(splatId) + '/clone',
      eu: externalUserId, headers, keyed: true }, o);
    return splitClone(a, splatId);
  }

  /** Polls a clone job once. */
  async pollClone(externalUserId: string, splatId: string, jobId: string, o?: CallOptions): Promise<CloneStep> {
    const a = await this.request<CloneAnswer>({ method: 'GET', path: '/api/v1/splats/' + pathEscape(splatId) + '/clone/' + pathEscape(jobId), eu: externalUserId }, o);
    return splitClone(a, splatId);
  }

  /** Polls a clone job every `pollIntervalMs` (1500 by default) until it finishes. */
  async waitClone(externalUserId: string, splatId: string, jobId: string, c: CloneOptions = {}, o: CallOptions = {}): Promise<T.CloneResult> {
    const every = c.pollIntervalMs && c.pollIntervalMs > 0 ? c.pollIntervalMs : 1500;
    for (;;) {
      const step = await this.pollClone(externalUserId, splatId, jobId, o);
      if (step.result) return step.result;
      if (!step.job) throw new Error('splathost: clone poll answered neither a result nor a running job');
      c.onProgress?.(step.job);
      await sleep(every, o.signal);
    }
  }

  /**
   * Clones a scene and waits for the copy. A 429 CLONE_IN_PROGRESS is thrown, unless
   * `resumeRunning` is set and the running job copies this same scene: that job is polled instead.
   */
  async cloneAndWait(externalUserId: string, splatId: string, c: CloneOptions = {}, o?: CallOptions): Promise<T.CloneResult> {
    let step: CloneStep;
    try {
      step = await this.startClone(externalUserId, splatId, c, o);
    } catch (err) {
      const running = err instanceof SplathostError ? err.cloneInProgress : undefined;
      if (!c.resumeRunning || running?.sourceSplatId !== splatId) throw err;
      step = { job: { jobId: running.jobId, sourceSplatId: splatId, copiedObjects: 0, totalObjects: 0 } };
    }
    return step.result ?? this.waitClone(externalUserId, splatId, step.job!.jobId, c, o);
  }

  // Webhooks.

  /** Creates an endpoint; its answer is the only one with the `secret`. Not retried after a 5xx: a lost answer would hide a secret nobody saw. */
  async createWebhook(w: T.WebhookInput, o?: CallOptions): Promise<T.Webhook> {
    return (await this.request<{ webhook: T.Webhook }>({ method: 'POST', path: '/api/v1/webhooks', body: w }, o)).webhook;
  }

  /** The integration's endpoints (without secrets). */
  async listWebhooks(o?: CallOptions): Promise<T.Webhook[]> {
    return (await this.request<{ webhooks: T.Webhook[] }>({ method: 'GET', path: '/api/v1/webhooks' }, o)).webhooks;
  }

  /** Deletes an endpoint. */
  async deleteWebhook(id: string, o?: CallOptions): Promise<void> {
    await this.request({ method: 'DELETE', path: '/api/v1/webhooks/' + pathEscape(id) }, o);
  }

  /** Rotates an endpoint's secret (the old one signs too for a while); not retried after a 5xx. */
  async rotateWebhook(id: string, o?: CallOptions): Promise<T.Webhook> {
    return (await this.request<{ webhook: T.Webhook }>({ method: 'POST', path: '/api/v1/webhooks/' + pathEscape(id) + '/rotate' }, o)).webhook;
  }

  /** One page of an endpoint's delivery log, newest first. */
  webhookDeliveryLog(id: string, page: { limit?: number; cursor?: string } = {}, o?: CallOptions): Promise<T.WebhookDeliveries> {
    return this.request({ method: 'GET', path: '/api/v1/webhooks/' + pathEscape(id) + '/deliveries', query: { limit: page.limit, cursor: page.cursor } }, o);
  }

  /** Every delivery of an endpoint's log, page after page. */
  allWebhookDeliveries(id: string, pageSize?: number, o?: CallOptions): AsyncGenerator<T.WebhookDelivery, void, undefined> {
    return pages('', async (cursor) => {
      const p = await this.webhookDeliveryLog(id, { limit: pageSize, cursor }, o);
      return { items: p.deliveries, next: p.nextCursor ?? '' };
    });
  }

  /** Sends a delivery again (safe to retry: it only sends again). */
  async redeliverWebhook(id: string, deliveryId: string, o?: CallOptions): Promise<void> {
    await this.request({ method: 'POST', path: '/api/v1/webhooks/' + pathEscape(id) + '/deliveries/' + pathEscape(deliveryId) + '/redeliver', safe: true }, o);
  }

  // Renditions (operator API: the client's adminToken).

  /** The rendition jobs, filtered. */
  async listRenditions(f: T.RenditionFilter = {}, o?: CallOptions): Promise<T.Rendition[]> {
    return (await this.request<{ renditions: T.Rendition[] }>({ method: 'GET', path: '/admin/v1/renditions', auth: 'admin',
      query: { state: f.state, integrationId: f.integrationId, limit: f.limit } }, o)).renditions;
  }

  /** Starts a failed rendition again (safe to retry: a running one is not started twice). */
  async retryRendition(splatId: string, o?: CallOptions): Promise<T.Rendition> {
    return (await this.request<{ rendition: T.Rendition }>({ method: 'POST', path: '/admin/v1/renditions/' + pathEscape(splatId) + '/retry',
      auth: 'admin', safe: true }, o)).rendition;
  }
}

/** Options of the clone calls. */
export interface CloneOptions {
  /** Prefer: respond-async (a 202 and a job at once). */
  respondAsync?: boolean;
  /** Prefer: wait=N, the seconds the service may hold the request before it answers 202. */
  waitSeconds?: number;
  /** The poll interval of waitClone, in ms (1500 by default, within the spec's 1-2 s). */
  pollIntervalMs?: number;
  /** cloneAndWait: poll the running job of a 429 CLONE_IN_PROGRESS when it copies the same scene. */
  resumeRunning?: boolean;
  /** Called with each running poll. */
  onProgress?: (job: T.CloneJob) => void;
}

/** A clone's state: its result once finished, else the running job. */
export interface CloneStep {
  result?: T.CloneResult;
  job?: T.CloneJob;
}

/** The clone routes' answer: a finished clone or a running job. */
interface CloneAnswer extends Partial<T.CloneResult>, Partial<T.CloneJob> {
  status: string;
}

function splitClone(a: CloneAnswer, splatId: string): CloneStep {
  if (a.status === 'success') {
    return { result: { splatId: a.splatId!, sourceSplatId: a.sourceSplatId!, splat: a.splat!, usage: a.usage! } };
  }
  return { job: { jobId: a.jobId!, sourceSplatId: a.sourceSplatId || splatId, copiedObjects: a.copiedObjects ?? 0, totalObjects: a.totalObjects ?? 0 } };
}
