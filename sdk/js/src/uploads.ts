// Scene uploads: a single signed PUT below the multipart threshold, resumable parts above it.
import type { CallOptions, Splathost } from './client.ts';
import type * as T from './types.ts';
import * as X from './transfer.ts';

export { MULTIPART_MIN_BYTES, SINGLE_PUT_MAX_BYTES, CACHE_CONTROL } from './transfer.ts';

/** Where an upload stands: after each file or part stored, and once at the start. */
export type UploadProgress = X.TransferProgress;

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
  const contentType = o.contentType ?? X.sceneContentType(fileName);
  if (!contentType) throw new Error(`splathost: ${fileName}: a scene file ends in .sog, .ksplat, .ply or .splat`);
  return { fileName, contentType, fileSize: file.size };
}

/** Requests a signed single-PUT URL for a scene file (keyed). */
export function requestFileUpload(c: Splathost, eu: string, r: T.FileUploadRequest, o?: CallOptions): Promise<T.FileUpload> {
  return c.request({ method: 'POST', path: '/api/v1/uploads/splat-file', eu, body: r, keyed: true }, o);
}

/** PUTs a file to a signed single-PUT URL with the exact headers it was signed with. */
export async function putObject(c: Splathost, uploadUrl: string, contentType: string, body: Blob, o?: CallOptions): Promise<void> {
  await c.putSigned(uploadUrl, body, { 'Content-Type': contentType, 'Cache-Control': X.CACHE_CONTROL }, o);
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

/** The transfer's calls over the client: the /api/v1 routes with the keys, by its retry rules. */
function transport(c: Splathost, eu: string, o: CallOptions): X.UploadTransport {
  // The start request's Idempotency-Key (a chosen one) is the caller's; the other calls take
  // only the signal.
  return {
    requestFile: (r, signal) => requestFileUpload(c, eu, r, { ...o, signal }),
    putFile: (url, contentType, file, signal) => putObject(c, url, contentType, file, { signal }),
    startMultipart: (r, signal) => startMultipartUpload(c, eu, r, { ...o, signal }),
    getMultipart: (id, signal) => getMultipartUpload(c, eu, id, { signal }),
    putPart: (url, part, signal) => putPart(c, url, part, { signal }),
    completeMultipart: (id, parts, signal) => completeMultipartUpload(c, eu, id, parts, { signal }),
  };
}

/**
 * Uploads (or, with `uploadId`, resumes) a file in parts, completes it and returns its fileUrl.
 * On a failure the stored parts stay: call again with the id `onUploadStarted` gave (the error
 * carries it as `uploadId`).
 */
export async function uploadParts(c: Splathost, eu: string, file: UploadBody, o: UploadOptions = {}): Promise<string> {
  return (await upload(c, eu, file, fileRequest(file, o), o, true)).fileUrl;
}

/** Runs the shared transfer; a failure once the multipart upload is known names it for a resume. */
async function upload(c: Splathost, eu: string, file: UploadBody, req: T.FileUploadRequest, o: UploadOptions, parts: boolean): Promise<X.Transferred> {
  let uploadId = '';
  const run: X.TransferOptions = { ...o, onUploadStarted: (id) => { uploadId = id; o.onUploadStarted?.(id); } };
  const t = transport(c, eu, { signal: o.signal, idempotencyKey: o.idempotencyKey });
  try {
    return await (parts ? X.transferParts(t, file, req, run) : X.transfer(t, file, req, run));
  } catch (err) {
    if (!uploadId) throw err;
    const cause = err instanceof Error ? err.message : String(err);
    throw Object.assign(new Error(`splathost: upload ${uploadId} interrupted (resume with options.uploadId): ${cause}`), { cause: err, uploadId });
  }
}

/**
 * Uploads a scene file and commits it: one PUT below `multipartThreshold`, resumable parts from
 * it (or when `uploadId` resumes one). The title defaults to the file name.
 */
export async function uploadFile(c: Splathost, eu: string, file: UploadBody, o: UploadOptions = {}): Promise<T.CommitResult> {
  const req = fileRequest(file, o);
  const { fileUrl } = await upload(c, eu, file, req, o, false);
  return c.commitSplat(eu, { title: o.title || req.fileName, description: o.description, visibility: o.visibility,
    splatType: 'file', splatUrl: fileUrl }, { signal: o.signal, idempotencyKey: o.idempotencyKey });
}
