// Uploads of a scene file: one signed PUT below the multipart minimum, resumable parts from it
// (contract item 14). Which path a file takes, the part queue, progress and resume are the npm
// package's (sdk/js/src/transfer.ts, bundled in), so both SDKs upload alike; this module maps
// them to the editor session's or the keys' routes.
import * as X from '../../../sdk/js/src/transfer.ts';

/** One signed part URL of a multipart upload. */
export interface SignedPart {
  partNumber: number;
  uploadUrl: string;
}

/** A part the object store already holds, with a signed URL to send it again. */
export interface StoredPart {
  partNumber: number;
  etag: string;
  size: number;
  uploadUrl: string;
}

/**
 * Where an upload stands; `bytesDone` counts whole parts stored (resumed ones included), or the
 * whole file once its single PUT is done.
 */
export interface UploadProgress {
  /** The multipart upload's id; absent for a file sent in one PUT (nothing to resume). */
  uploadId?: string;
  bytesDone: number;
  bytesTotal: number;
  partsDone: number;
  partsTotal: number;
}

/** Events of an uploader. */
export interface UploaderEventMap {
  /**
   * A multipart upload's id, once known: keep it (e.g. in localStorage) to resume after a reload.
   * Not emitted for a file sent in one PUT.
   */
  uploadId: { uploadId: string };
  /** Once at the start (of a resumed upload: at what is stored), then after the file or each part stored. */
  progress: UploadProgress;
}

export type UploaderEventName = keyof UploaderEventMap;

/**
 * How the uploader reaches the service. In a browser use an editor session scoped to the
 * customer (`sessionToken`, the /api/embed/editor routes): the integration's secret key must
 * never reach a browser. On a server (Node) the integration's keys and the customer's id may
 * be used instead (the /api/v1 routes).
 */
export interface UploaderOptions {
  baseUrl: string;
  sessionToken?: string;
  secretKey?: string;
  publicKey?: string;
  externalUserId?: string;
  /** Parts in flight at once (default 4). */
  concurrency?: number;
  /**
   * From this size (bytes) a file goes in parts; below it in one signed PUT. Default
   * {@link MULTIPART_MIN_BYTES} (5 MiB), the smallest file a multipart upload takes. Raised, files
   * up to it go in one PUT (at most 2 GiB); a resumed upload is always in parts.
   */
  multipartThreshold?: number;
  /** Attempts per part and per API call on network errors and 5xx (default 4). */
  attempts?: number;
  /** Replaces the global fetch (tests, instrumentation). */
  fetch?: typeof fetch;
  /**
   * On resume, checks a stored part's bytes against its etag (S3's etag of a part is the hex MD5
   * of its bytes; browsers have no built-in MD5, so bring one). A part it rejects is sent again:
   * a store may keep a part whose upload was cut off at its full size with other bytes. Without
   * it, stored parts are trusted.
   */
  verifyPart?: (part: Blob, etag: string) => boolean | Promise<boolean>;
}

/** What {@link Uploader.upload} needs of the file: a Blob (a File) with its name. */
export interface UploadFile {
  name: string;
  size: number;
  type?: string;
  slice(start: number, end: number): Blob;
}

/** Options of one upload. */
export interface UploadRunOptions {
  /** Resume this multipart upload (the id an earlier run's `uploadId` event gave). */
  uploadId?: string;
  /** Content type to declare; derived from the extension when absent. */
  contentType?: string;
  /** Aborting stops sending; a multipart upload's stored parts stay, and it can be resumed. */
  signal?: AbortSignal;
}

/** The result of a finished upload: commit the scene with `splatUrl: fileUrl`. */
export interface UploadResult {
  /** The multipart upload's id; absent for a file sent in one PUT. */
  uploadId?: string;
  fileUrl: string;
}

/** The smallest file a multipart upload takes (5 MiB): smaller files go in one PUT. */
export const MULTIPART_MIN_BYTES: number = X.MULTIPART_MIN_BYTES;

/** An error answer of the service ({status:'error', code, message}) or of the store. */
export class UploadError extends Error {
  readonly status: number;
  /** The envelope's machine-readable code, on every answer of the service (the ErrorCode enum
   *  of api/openapi.yaml: e.g. 'CUSTOMER_NOT_PROVISIONED', 'STORAGE_QUOTA_EXCEEDED');
   *  undefined for a refusal of the object store, which answers XML. */
  readonly code?: string;
  readonly body: unknown;
  constructor(status: number, message: string, body: unknown, code?: string) {
    super(message);
    this.name = 'UploadError';
    this.status = status;
    this.code = code;
    this.body = body;
  }
}

/**
 * Uploads scene files: in one signed PUT below the multipart threshold, else in parallel,
 * resumable parts. Create it with {@link createUploader}.
 */
export interface Uploader {
  /** Uploads (or resumes) `file` and completes it; resolves with its fileUrl. */
  upload(file: UploadFile, options?: UploadRunOptions): Promise<UploadResult>;
  /** Abandons a multipart upload: the store drops its parts. */
  abort(uploadId: string): Promise<void>;
  /** Subscribes to an event; returns the unsubscribe function. */
  on<K extends UploaderEventName>(name: K, handler: (payload: UploaderEventMap[K]) => void): () => void;
}

/** Returns an uploader of scene files for one customer (see {@link UploaderOptions}). */
export function createUploader(options: UploaderOptions): Uploader {
  const base = options.baseUrl.replace(/\/+$/, '');
  const doFetch = options.fetch ?? globalThis.fetch.bind(globalThis);
  const attempts = Math.max(1, options.attempts ?? 4);
  const concurrency = Math.max(1, options.concurrency ?? 4);
  const session = options.sessionToken !== undefined;
  if (!session && !(options.secretKey && options.publicKey && options.externalUserId)) {
    throw new Error('createUploader: give sessionToken, or secretKey, publicKey and externalUserId');
  }
  const root = (session ? '/api/embed/editor' : '/api/v1') + '/uploads/splat-file';
  const headers: Record<string, string> = session
    ? { Authorization: `Bearer ${options.sessionToken}` }
    : { Authorization: `Bearer ${options.secretKey}`, 'X-Service-Public-Key': options.publicKey!,
      'X-Service-External-User-Id': options.externalUserId! };
  const handlers: { [K in UploaderEventName]: Set<(p: UploaderEventMap[K]) => void> } = {
    uploadId: new Set(), progress: new Set(),
  };
  const emit = <K extends UploaderEventName>(name: K, payload: UploaderEventMap[K]) => {
    for (const h of [...handlers[name]]) (h as (p: UploaderEventMap[K]) => void)(payload);
  };

  // retry runs fn up to `attempts` times while it fails with a network error or a 5xx.
  async function retry<T>(fn: () => Promise<T>, signal?: AbortSignal): Promise<T> {
    for (let i = 1; ; i++) {
      try {
        return await fn();
      } catch (err) {
        // A retried POST whose first attempt still runs gets 409 IDEMPOTENCY_KEY_IN_USE: wait it out.
        const retryable = !(err instanceof UploadError) || err.status >= 500 || err.code === 'IDEMPOTENCY_KEY_IN_USE';
        if (signal?.aborted || !retryable || i >= attempts || (err as Error).name === 'AbortError') throw err;
        await new Promise((r) => setTimeout(r, Math.min(8000, 250 * 2 ** (i - 1)) * Math.random()));
      }
    }
  }

  async function api<T>(method: string, path: string, body?: unknown, signal?: AbortSignal): Promise<T> {
    // With the integration's keys (a server), a POST carries one Idempotency-Key across all its
    // retries, so a retry after a lost answer replays it instead of starting a second upload. A
    // browser's session route is not covered, and CORS would refuse the header there.
    const sent: Record<string, string> = body === undefined ? { ...headers } : { ...headers, 'Content-Type': 'application/json' };
    if (method === 'POST' && !session) sent['Idempotency-Key'] = globalThis.crypto.randomUUID();
    return retry(async () => {
      const resp = await doFetch(base + root + path, {
        method, signal,
        headers: sent,
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const text = await resp.text();
      let json: any = null;
      try { json = text ? JSON.parse(text) : null; } catch { /* not JSON: kept as text below */ }
      if (!resp.ok) {
        throw new UploadError(resp.status, json?.message ?? `HTTP ${resp.status}`, json ?? text, json?.code);
      }
      return json as T;
    }, signal);
  }

  // PUTs a body to a signed URL; the headers must be the ones it was signed with.
  async function put(url: string, body: Blob, sent: Record<string, string>, signal?: AbortSignal): Promise<string> {
    return retry(async () => {
      const resp = await doFetch(url, { method: 'PUT', headers: sent, body, signal });
      if (!resp.ok) {
        throw new UploadError(resp.status, `upload PUT refused: HTTP ${resp.status}`, await resp.text().catch(() => ''));
      }
      // The ETag may be hidden by the store's CORS rules; the listing fills it in then.
      return (resp.headers.get('ETag') ?? '').replace(/"/g, '');
    }, signal);
  }

  const byId = (uploadId: string) => '/' + encodeURIComponent(uploadId);
  const transport: X.UploadTransport = {
    requestFile: (r, signal) => api('POST', '', r, signal),
    putFile: async (url, contentType, file, signal) => {
      await put(url, file, { 'Content-Type': contentType, 'Cache-Control': X.CACHE_CONTROL }, signal);
    },
    startMultipart: (r, signal) => api('POST', '', { ...r, multipart: true }, signal),
    getMultipart: (uploadId, signal) => api('GET', byId(uploadId), undefined, signal),
    putPart: (url, part, signal) => put(url, part, {}, signal),
    completeMultipart: async (uploadId, parts, signal) =>
      (await api<{ fileUrl: string }>('POST', byId(uploadId) + '/complete', { parts }, signal)).fileUrl,
  };

  async function upload(file: UploadFile, run: UploadRunOptions = {}): Promise<UploadResult> {
    const contentType = run.contentType ?? X.sceneContentType(file.name) ?? 'application/octet-stream';
    let uploadId: string | undefined;
    const res = await X.transfer(transport, file, { fileName: file.name, contentType, fileSize: file.size }, {
      uploadId: run.uploadId, signal: run.signal, concurrency, multipartThreshold: options.multipartThreshold,
      verifyPart: options.verifyPart,
      onUploadStarted: (id) => { uploadId = id; emit('uploadId', { uploadId: id }); },
      onProgress: (p) => emit('progress', uploadId === undefined ? p : { uploadId, ...p }),
    });
    return res.uploadId === undefined ? { fileUrl: res.fileUrl } : { uploadId: res.uploadId, fileUrl: res.fileUrl };
  }

  return {
    upload,
    async abort(uploadId: string) {
      await api('DELETE', byId(uploadId));
    },
    on(name, handler) {
      const set = handlers[name] as Set<typeof handler>;
      set.add(handler);
      return () => { set.delete(handler); };
    },
  };
}
