// Resumable multipart upload of a scene file (contract item 14).

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

/** Where an upload stands; `bytesDone` counts whole parts stored (resumed ones included). */
export interface UploadProgress {
  uploadId: string;
  bytesDone: number;
  bytesTotal: number;
  partsDone: number;
  partsTotal: number;
}

/** Events of an uploader. */
export interface UploaderEventMap {
  /** The upload's id, once known: keep it (e.g. in localStorage) to resume after a reload. */
  uploadId: { uploadId: string };
  /** After each part stored, and once at the start of a resumed upload. */
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
  /** Resume this upload (the id an earlier run's `uploadId` event gave). */
  uploadId?: string;
  /** Content type to declare; derived from the extension when absent. */
  contentType?: string;
  /** Aborting stops sending; the parts already stored stay, and the upload can be resumed. */
  signal?: AbortSignal;
}

/** The result of a finished upload: commit the scene with `splatUrl: fileUrl`. */
export interface UploadResult {
  uploadId: string;
  fileUrl: string;
}

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

/** Content type declared for each scene file extension. */
const SCENE_TYPES: Record<string, string> = {
  '.sog': 'application/sog', '.ksplat': 'application/ksplat', '.ply': 'application/ply', '.splat': 'application/splat',
};

/** The answer of POST …/splat-file with multipart: true. */
interface MultipartStart { uploadId: string; fileUrl: string; partSize: number; parts: SignedPart[] }
/** The answer of GET …/splat-file/{uploadId}. */
interface MultipartStatus {
  uploadId: string;
  fileUrl: string;
  partSize: number;
  fileSize: number;
  state: 'uploading' | 'completed';
  parts: StoredPart[];
  missingParts: SignedPart[];
}

/** Uploads scene files in parallel, resumable parts. Create it with {@link createUploader}. */
export interface Uploader {
  /** Uploads (or resumes) `file` and completes it; resolves with its fileUrl. */
  upload(file: UploadFile, options?: UploadRunOptions): Promise<UploadResult>;
  /** Abandons an upload: the store drops its parts. */
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

  async function putPart(url: string, blob: Blob, signal?: AbortSignal): Promise<string> {
    return retry(async () => {
      const resp = await doFetch(url, { method: 'PUT', body: blob, signal });
      if (!resp.ok) {
        throw new UploadError(resp.status, `part upload refused: HTTP ${resp.status}`, await resp.text().catch(() => ''));
      }
      // The ETag may be hidden by the store's CORS rules; the listing fills it in then.
      return (resp.headers.get('ETag') ?? '').replace(/"/g, '');
    }, signal);
  }

  async function upload(file: UploadFile, run: UploadRunOptions = {}): Promise<UploadResult> {
    const { signal } = run;
    let start: MultipartStart;
    let todo: SignedPart[];
    const etags = new Map<number, string>();
    if (run.uploadId) {
      const st = await api<MultipartStatus>('GET', '/' + encodeURIComponent(run.uploadId), undefined, signal);
      if (st.fileSize !== file.size) {
        throw new Error(`upload ${run.uploadId} is of a ${st.fileSize}-byte file, not this ${file.size}-byte one`);
      }
      emit('uploadId', { uploadId: st.uploadId });
      if (st.state === 'completed') return { uploadId: st.uploadId, fileUrl: st.fileUrl };
      todo = [...st.missingParts];
      for (const p of st.parts) {
        const from = (p.partNumber - 1) * st.partSize;
        if (options.verifyPart && !(await options.verifyPart(file.slice(from, from + p.size), p.etag))) {
          todo.push({ partNumber: p.partNumber, uploadUrl: p.uploadUrl });
        } else {
          etags.set(p.partNumber, p.etag);
        }
      }
      start = { uploadId: st.uploadId, fileUrl: st.fileUrl, partSize: st.partSize, parts: [] };
    } else {
      const ext = file.name.slice(file.name.lastIndexOf('.')).toLowerCase();
      const contentType = run.contentType ?? SCENE_TYPES[ext] ?? 'application/octet-stream';
      start = await api<MultipartStart>('POST', '', { fileName: file.name, contentType, fileSize: file.size, multipart: true }, signal);
      emit('uploadId', { uploadId: start.uploadId });
      todo = start.parts;
    }
    const { uploadId, partSize } = start;
    const total = Math.ceil(file.size / partSize);
    const lengthOf = (n: number) => Math.min(partSize, file.size - (n - 1) * partSize);
    const progress: UploadProgress = { uploadId, bytesDone: 0, bytesTotal: file.size, partsDone: 0, partsTotal: total };
    for (const n of etags.keys()) { progress.bytesDone += lengthOf(n); progress.partsDone++; }
    emit('progress', { ...progress });

    // Workers take parts from one queue; the first failure stops the others from starting more.
    const queue = [...todo];
    let failure: unknown = null;
    const worker = async () => {
      while (queue.length > 0 && failure === null && !signal?.aborted) {
        const p = queue.shift()!;
        if (p.partNumber < 1 || p.partNumber > total) {
          failure = new Error(`the service signed part ${p.partNumber}, which this file does not have`);
          return;
        }
        const from = (p.partNumber - 1) * partSize;
        try {
          etags.set(p.partNumber, await putPart(p.uploadUrl, file.slice(from, from + lengthOf(p.partNumber)), signal));
        } catch (err) {
          failure ??= err;
          return;
        }
        progress.bytesDone += lengthOf(p.partNumber);
        progress.partsDone++;
        emit('progress', { ...progress });
      }
    };
    await Promise.all(Array.from({ length: Math.min(concurrency, todo.length) }, worker));
    if (failure !== null) throw failure;
    signal?.throwIfAborted();

    if ([...etags.values()].some((e) => e === '')) {
      const st = await api<MultipartStatus>('GET', '/' + encodeURIComponent(uploadId), undefined, signal);
      for (const p of st.parts) etags.set(p.partNumber, p.etag);
    }
    const parts = [...etags.entries()].sort((a, b) => a[0] - b[0]).map(([partNumber, etag]) => ({ partNumber, etag }));
    const done = await api<{ fileUrl: string }>('POST', '/' + encodeURIComponent(uploadId) + '/complete', { parts }, signal);
    return { uploadId, fileUrl: done.fileUrl };
  }

  return {
    upload,
    async abort(uploadId: string) {
      await api('DELETE', '/' + encodeURIComponent(uploadId));
    },
    on(name, handler) {
      const set = handlers[name] as Set<typeof handler>;
      set.add(handler);
      return () => { set.delete(handler); };
    },
  };
}
