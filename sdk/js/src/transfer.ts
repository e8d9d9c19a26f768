// The upload run both JS SDKs share: this package's uploadFile/uploadParts and the embed SDK's
// createUploader (web/sdk/src/upload.ts, which esbuild bundles from here). One signed PUT below
// the multipart threshold (the spec's splat-file upload URL), resumable parallel parts from it
// (contract item 14). Each SDK brings a transport (its routes, auth and retries); which path a
// file takes, the part queue, progress and resume are decided here once, so both behave alike.
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

/** The content type a scene file declares by its extension; undefined for another extension. */
export function sceneContentType(fileName: string): string | undefined {
  return SCENE_TYPES[fileName.slice(fileName.lastIndexOf('.')).toLowerCase()];
}

/** Where a transfer stands: once at the start, then after the file or each part stored. */
export interface TransferProgress {
  bytesDone: number;
  bytesTotal: number;
  partsDone: number;
  partsTotal: number;
}

/** What a transfer reads of the file: its size and slices (a Blob or a File has both). */
export interface TransferFile {
  size: number;
  slice(start: number, end: number): Blob;
}

/**
 * The service and store calls a transfer makes. Each SDK maps them to its routes and auth
 * (keys on /api/v1, or an editor session on /api/embed/editor) and retries them by its rules.
 */
export interface UploadTransport {
  /** POST …/splat-file: a signed single-PUT URL and the fileUrl to commit. */
  requestFile(r: T.FileUploadRequest, signal?: AbortSignal): Promise<{ uploadUrl: string; fileUrl: string }>;
  /** PUTs the whole file to its signed URL with the Content-Type and Cache-Control it was signed with. */
  putFile(uploadUrl: string, contentType: string, file: Blob, signal?: AbortSignal): Promise<void>;
  /** POST …/splat-file with multipart: true. */
  startMultipart(r: T.FileUploadRequest, signal?: AbortSignal): Promise<Pick<T.MultipartUpload, 'uploadId' | 'fileUrl' | 'partSize' | 'parts'>>;
  /** GET …/splat-file/{uploadId}: the parts stored and fresh URLs for the missing ones. */
  getMultipart(uploadId: string, signal?: AbortSignal): Promise<T.MultipartStatus>;
  /** PUTs one part and returns its ETag ('' when CORS hides it). */
  putPart(uploadUrl: string, part: Blob, signal?: AbortSignal): Promise<string>;
  /** POST …/{uploadId}/complete; resolves with the fileUrl ('' to keep the start's). */
  completeMultipart(uploadId: string, parts: T.CompletedPart[], signal?: AbortSignal): Promise<string>;
}

/** Options of one transfer. */
export interface TransferOptions {
  /** From this size (bytes) the file goes in parts, below it in one PUT (default {@link MULTIPART_MIN_BYTES}). */
  multipartThreshold?: number;
  /** Resume this multipart upload: the parts stored are not sent again. */
  uploadId?: string;
  /** Parts in flight at once (default 4). */
  concurrency?: number;
  /** Aborting stops sending; the parts already stored stay, and the upload can be resumed. */
  signal?: AbortSignal;
  /** On resume, checks a stored part's bytes against its etag; a part it rejects is sent again. */
  verifyPart?: (part: Blob, etag: string) => boolean | Promise<boolean>;
  /** Called with a multipart upload's id once known (never for a single PUT: nothing to resume). */
  onUploadStarted?: (uploadId: string) => void;
  onProgress?: (p: TransferProgress) => void;
}

/** A finished transfer: the fileUrl to commit, and the multipart upload's id (none for a single PUT). */
export interface Transferred {
  uploadId?: string;
  fileUrl: string;
}

/**
 * Whether a file of `size` bytes goes in parts: from the threshold (a multipart upload's minimum
 * unless raised), above the single-PUT ceiling, and always when resuming.
 */
export function usesParts(size: number, o: Pick<TransferOptions, 'multipartThreshold' | 'uploadId'>): boolean {
  return o.uploadId !== undefined || size >= (o.multipartThreshold ?? MULTIPART_MIN_BYTES) || size > SINGLE_PUT_MAX_BYTES;
}

/** Uploads `file` (declared as `r`) in one PUT or in parts, as {@link usesParts} decides. */
export function transfer(t: UploadTransport, file: TransferFile, r: T.FileUploadRequest, o: TransferOptions = {}): Promise<Transferred> {
  return usesParts(file.size, o) ? transferParts(t, file, r, o) : transferSingle(t, file, r, o);
}

/** Uploads `file` in one signed PUT. */
export async function transferSingle(t: UploadTransport, file: TransferFile, r: T.FileUploadRequest, o: TransferOptions = {}): Promise<Transferred> {
  const { signal } = o;
  o.onProgress?.({ bytesDone: 0, bytesTotal: r.fileSize, partsDone: 0, partsTotal: 1 });
  const up = await t.requestFile(r, signal);
  await t.putFile(up.uploadUrl, r.contentType, file.slice(0, file.size), signal);
  o.onProgress?.({ bytesDone: r.fileSize, bytesTotal: r.fileSize, partsDone: 1, partsTotal: 1 });
  return { fileUrl: up.fileUrl };
}

/**
 * Uploads (or, with `uploadId`, resumes) `file` in parts and completes it. A failure is thrown as
 * it came (an abort as the signal's reason); the parts stored stay for a resume.
 */
export async function transferParts(t: UploadTransport, file: TransferFile, r: T.FileUploadRequest, o: TransferOptions = {}): Promise<Transferred> {
  const { signal } = o;
  let uploadId: string, fileUrl: string, partSize: number;
  let todo: T.SignedPart[];
  const etags = new Map<number, string>();
  if (o.uploadId) {
    const st = await t.getMultipart(o.uploadId, signal);
    if (st.fileSize !== file.size) {
      throw new Error(`splathost: upload ${o.uploadId} is of a ${st.fileSize}-byte file, not this ${file.size}-byte one`);
    }
    ({ uploadId, fileUrl, partSize } = st);
    o.onUploadStarted?.(uploadId);
    if (st.state === 'completed') return { uploadId, fileUrl };
    todo = [...st.missingParts];
    for (const p of st.parts) {
      const from = (p.partNumber - 1) * partSize;
      if (o.verifyPart && !(await o.verifyPart(file.slice(from, from + p.size), p.etag))) {
        todo.push({ partNumber: p.partNumber, uploadUrl: p.uploadUrl });
      } else {
        etags.set(p.partNumber, p.etag);
      }
    }
  } else {
    ({ uploadId, fileUrl, partSize, parts: todo } = await t.startMultipart(r, signal));
    o.onUploadStarted?.(uploadId);
  }
  if (!(partSize > 0)) throw new Error(`splathost: the service answered part size ${partSize}`);
  const total = Math.ceil(file.size / partSize);
  const lengthOf = (n: number) => Math.min(partSize, file.size - (n - 1) * partSize);
  const progress: TransferProgress = { bytesDone: 0, bytesTotal: file.size, partsDone: 0, partsTotal: total };
  for (const n of etags.keys()) { progress.bytesDone += lengthOf(n); progress.partsDone++; }
  o.onProgress?.({ ...progress });

  // Workers take parts from one queue; the first failure (or an abort) stops the others from
  // starting more.
  const queue = [...todo];
  let failure: unknown = null;
  const worker = async () => {
    while (queue.length > 0 && failure === null && !signal?.aborted) {
      const p = queue.shift()!;
      if (p.partNumber < 1 || p.partNumber > total) {
        failure = new Error(`splathost: the service signed part ${p.partNumber}, which this file does not have`);
        return;
      }
      const from = (p.partNumber - 1) * partSize;
      try {
        etags.set(p.partNumber, await t.putPart(p.uploadUrl, file.slice(from, from + lengthOf(p.partNumber)), signal));
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
  if (failure !== null) throw failure;
  signal?.throwIfAborted();

  // A browser may not see the store's ETag header (CORS): the listing has every part's.
  if ([...etags.values()].some((e) => e === '')) {
    for (const p of (await t.getMultipart(uploadId, signal)).parts) etags.set(p.partNumber, p.etag);
  }
  const parts = [...etags.entries()].sort((a, b) => a[0] - b[0]).map(([partNumber, etag]) => ({ partNumber, etag }));
  return { uploadId, fileUrl: (await t.completeMultipart(uploadId, parts, signal)) || fileUrl };
}
