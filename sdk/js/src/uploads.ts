// Scene uploads: a single signed PUT below the multipart threshold, resumable parts above it.
import type { CallOptions, Splathost } from './client.ts';
import type * as T from './types.ts';

/** The smallest file a multipart upload takes (5 MiB); every part but the last is at least this. */
export const MULTIPART_MIN_BYTES = 5 * 1024 * 1024;

/** The largest file one signed PUT takes (2 GiB); larger files go in parts. */
export const SINGLE_PUT_MAX_BYTES = 2 * 1024 * 1024 * 1024;

/** The Cache-Control every uploaded object is stored with (the signed URL requires it). */
export const CACHE_CONTROL = 'public, max-age=31536000, immutable';

/** Content type declared for each scene file extension. */
const SCENE_TYPES: Record<string, string> = {
  '.sog': 'application/sog', '.ksplat': 'application/ksplat', '.ply': 'application/ply', '.splat': 'application/splat',
};

/** Where an upload stands: after each file or part stored, and once at the start. */
export interface UploadProgress {
  bytesDone: number;
  bytesTotal: number;
  partsDone: number;
  partsTotal: number;
}

/**
 * A scene file: a Blob (in a browser a File; on Node `await fs.openAsBlob(path)`, which reads
 * the file lazily). Its name is `fileName` of the options, else the File's name.
 */
export type UploadBody = Blob & { name?: string };

/** Options of uploadFile and uploadParts. */
export interface UploadOptions extends CallOptions {
  /** The file's name (its extension gives the content type); defaults to a File's name. */
  fileName?: string;
  /** The content type to declare; from the extension when absent. */
  contentType?: string;
  /** uploadFile: the scene's title (default the file name), description and visibility. */
  title?: string;
  description?: string;
  visibility?: T.Visibility;
  /**
   * From this size (bytes) the file goes in parts; below it in one PUT. Default
   * {@link MULTIPART_MIN_BYTES}, the smallest a multipart upload takes, so every file that can be
   * resumed is. Raised above it, files up to the threshold go in one PUT (at most 2 GiB).
   */
  multipartThreshold?: number;
  /** Resume this multipart upload (the id `onUploadStarted` gave); the parts stored are not sent again. */
  uploadId?: string;
  /** Called with a multipart upload's id once known: keep it to resume after a failure or a restart. */
  onUploadStarted?: (uploadId: string) => void;
  /** Parts in flight at once (default 4). */
  concurrency?: number;
  onProgress?: (p: UploadProgress) => void;
  /**
   * On resume, checks a stored part's bytes against its etag (the hex MD5 of the part; WebCrypto
   * has no MD5, so bring one, e.g. node:crypto's). A part it rejects is sent again. Without it,
   * stored parts are trusted.
   */
  verifyPart?: (part: Blob, etag: string) => boolean | Promise<boolean>;
}

function fileRequest(file: UploadBody, o: UploadOptions): T.FileUploadRequest {
  const fileName = o.fileName ?? file.name ?? '';
  if (!fileName) throw new Error('splathost: name the file (options.fileName)');
  const ext = fileName.slice(fileName.lastIndexOf('.')).toLowerCase();
  const contentType = o.contentType ?? SCENE_TYPES[ext];
  if (!contentType) throw new Error(`splathost: ${fileName}: a scene file ends in .sog, .ksplat, .ply or .splat`);
  return { fileName, contentType, fileSize: file.size };
}

/** Requests a signed single-PUT URL for a scene file (keyed). */
export function requestFileUpload(c: Splathost, eu: string, r: T.FileUploadRequest, o?: CallOptions): Promise<T.FileUpload> {
  return c.request({ method: 'POST', path: '/api/v1/uploads/splat-file', eu, body: r, keyed: true }, o);
}

/** PUTs a file to a signed single-PUT URL with the exact headers it was signed with. */
export async function putObject(c: Splathost, uploadUrl: string, contentType: string, body: Blob, o?: CallOptions): Promise<void> {
  await c.putSigned(uploadUrl, body, { 'Content-Type': contentType, 'Cache-Control': CACHE_CONTROL }, o);
}

/** Starts a multipart upload: its id, part size and a signed URL per part (keyed). */
export function startMultipartUpload(c: Splathost, eu: string, r: T.FileUploadRequest, o?: CallOptions): Promise<T.MultipartUpload> {
  return c.request({ method: 'POST', path: '/api/v1/uploads/splat-file', eu, body: { ...r, multipart: true }, keyed: true }, o);
}

const multipartPath = (uploadId: string) => '/api/v1/uploads/splat-file/' + encodeURIComponent(uploadId);

/** Where a multipart upload stands: the parts stored and fresh URLs for the missing ones. */
export function getMultipartUpload(c: Splathost, eu: string, uploadId: string, o?: CallOptions): Promise<T.MultipartStatus> {
  return c.request({ method: 'GET', path: multipartPath(uploadId), eu }, o);
}

/** Joins the stored parts into the file and returns its fileUrl (safe to retry: completing twice answers the same). */
export async function completeMultipartUpload(c: Splathost, eu: string, uploadId: string, parts: T.CompletedPart[], o?: CallOptions): Promise<string> {
  const r = await c.request<{ fileUrl: string }>({ method: 'POST', path: multipartPath(uploadId) + '/complete', eu, body: { parts }, safe: true }, o);
  return r.fileUrl;
}

/** Abandons a multipart upload: the store drops its parts. */
export async function abortMultipartUpload(c: Splathost, eu: string, uploadId: string, o?: CallOptions): Promise<void> {
  await c.request({ method: 'DELETE', path: multipartPath(uploadId), eu }, o);
}

/** PUTs one part to its signed URL and returns its ETag ('' when CORS hides it). */
export async function putPart(c: Splathost, uploadUrl: string, part: Blob, o?: CallOptions): Promise<string> {
  const h = await c.putSigned(uploadUrl, part, {}, o);
  return (h.get('ETag') ?? '').replace(/"/g, '');
}

/** Uploads a file in one PUT and returns its fileUrl. */
async function uploadSingle(c: Splathost, eu: string, file: UploadBody, req: T.FileUploadRequest, o: UploadOptions): Promise<string> {
  o.onProgress?.({ bytesDone: 0, bytesTotal: req.fileSize, partsDone: 0, partsTotal: 1 });
  const up = await requestFileUpload(c, eu, req, o);
  await putObject(c, up.uploadUrl, req.contentType, file, { signal: o.signal });
  o.onProgress?.({ bytesDone: req.fileSize, bytesTotal: req.fileSize, partsDone: 1, partsTotal: 1 });
  return up.fileUrl;
}

/**
 * Uploads (or, with `uploadId`, resumes) a file in parts, completes it and returns its fileUrl.
 * On a failure the stored parts stay: call again with the id `onUploadStarted` gave.
 */
export async function uploadParts(c: Splathost, eu: string, file: UploadBody, o: UploadOptions = {}): Promise<string> {
  const req = fileRequest(file, o);
  const call = { signal: o.signal };
  let uploadId: string, fileUrl: string, partSize: number;
  let todo: T.SignedPart[];
  const etags = new Map<number, string>();
  if (o.uploadId) {
    const st = await getMultipartUpload(c, eu, o.uploadId, call);
    if (st.fileSize !== file.size) throw new Error(`splathost: upload ${o.uploadId} is of a ${st.fileSize}-byte file, not this ${file.size}-byte one`);
    ({ uploadId, fileUrl, partSize } = st);
    o.onUploadStarted?.(uploadId);
    if (st.state === 'completed') return fileUrl;
    todo = [...st.missingParts];
    for (const p of st.parts) {
      const from = (p.partNumber - 1) * partSize;
      if (o.verifyPart && !(await o.verifyPart(file.slice(from, from + p.size), p.etag))) todo.push(p);
      else etags.set(p.partNumber, p.etag);
    }
  } else {
    const up = await startMultipartUpload(c, eu, req, o);
    ({ uploadId, fileUrl, partSize, parts: todo } = up);
    o.onUploadStarted?.(uploadId);
  }
  if (!(partSize > 0)) throw new Error(`splathost: the service answered part size ${partSize}`);
  const total = Math.ceil(file.size / partSize);
  const lengthOf = (n: number) => Math.min(partSize, file.size - (n - 1) * partSize);
  const progress: UploadProgress = { bytesDone: 0, bytesTotal: file.size, partsDone: 0, partsTotal: total };
  for (const n of etags.keys()) { progress.bytesDone += lengthOf(n); progress.partsDone++; }
  o.onProgress?.({ ...progress });

  // Workers take parts from one queue; the first failure stops the others from starting more.
  const queue = [...todo];
  let failure: unknown = null;
  const worker = async () => {
    while (queue.length > 0 && failure === null) {
      const p = queue.shift()!;
      if (p.partNumber < 1 || p.partNumber > total) {
        failure = new Error(`splathost: the service signed part ${p.partNumber}, which this file does not have`);
        return;
      }
      const from = (p.partNumber - 1) * partSize;
      try {
        etags.set(p.partNumber, await putPart(c, p.uploadUrl, file.slice(from, from + lengthOf(p.partNumber)), call));
      } catch (err) {
        failure ??= err;
        return;
      }
      progress.bytesDone += lengthOf(p.partNumber);
      progress.partsDone++;
      o.onProgress?.({ ...progress });
    }
  };
  await Promise.all(Array.from({ length: Math.min(Math.max(1, o.concurrency ?? 4), todo.length) }, worker));
  if (failure !== null) {
    const cause = failure instanceof Error ? failure.message : String(failure);
    throw Object.assign(new Error(`splathost: upload ${uploadId} interrupted (resume with options.uploadId): ${cause}`), { cause: failure, uploadId });
  }
  // A browser may not see the store's ETag header (CORS): the listing has every part's.
  if ([...etags.values()].some((e) => e === '')) {
    for (const p of (await getMultipartUpload(c, eu, uploadId, call)).parts) etags.set(p.partNumber, p.etag);
  }
  const parts = [...etags.entries()].sort((a, b) => a[0] - b[0]).map(([partNumber, etag]) => ({ partNumber, etag }));
  return (await completeMultipartUpload(c, eu, uploadId, parts, call)) || fileUrl;
}

/**
 * Uploads a scene file and commits it: one PUT below `multipartThreshold`, resumable parts from
 * it (or when `uploadId` resumes one). The title defaults to the file name.
 */
export async function uploadFile(c: Splathost, eu: string, file: UploadBody, o: UploadOptions = {}): Promise<T.CommitResult> {
  const req = fileRequest(file, o);
  const threshold = o.multipartThreshold ?? MULTIPART_MIN_BYTES;
  const multipart = o.uploadId !== undefined || file.size >= threshold || file.size > SINGLE_PUT_MAX_BYTES;
  const fileUrl = multipart ? await uploadParts(c, eu, file, o) : await uploadSingle(c, eu, file, req, o);
  return c.commitSplat(eu, { title: o.title || req.fileName, description: o.description, visibility: o.visibility,
    splatType: 'file', splatUrl: fileUrl }, { signal: o.signal, idempotencyKey: o.idempotencyKey });
}
