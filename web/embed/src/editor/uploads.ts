// Uploads to the store through signed URLs: a file as it is, and the canvas as a thumbnail.
import type { Api } from '../api.ts';

/** PUTs body to a signed upload URL with exactly the headers it was signed with (the store
 * refuses anything else; the browser sets Content-Length from the body). */
export async function putSigned(url: string, body: Blob, contentType: string): Promise<void> {
  const put = await fetch(url, {
    method: 'PUT', body,
    headers: { 'Content-Type': contentType, 'Cache-Control': 'public, max-age=31536000, immutable' },
  });
  if (!put.ok) throw new Error(`the upload failed (${put.status})`);
}

/** The canvas as a thumbnail: WebP where the browser encodes it, else JPEG, at most 1024 px
 * wide; null when no scene is drawn. The engines keep their drawing buffer, so the canvas can
 * be read between frames. */
async function captureThumbnail(src: HTMLCanvasElement): Promise<Blob | null> {
  if (document.documentElement.dataset.splathost !== 'rendered') return null;
  if (!src.width || !src.height) return null;
  const scale = Math.min(1, 1024 / src.width);
  const c = document.createElement('canvas');
  c.width = Math.max(1, Math.round(src.width * scale));
  c.height = Math.max(1, Math.round(src.height * scale));
  const g = c.getContext('2d');
  if (!g) return null;
  g.drawImage(src, 0, 0, c.width, c.height);
  const encode = (type: string) => new Promise<Blob | null>((resolve) => c.toBlob(resolve, type, 0.85));
  const webp = await encode('image/webp');
  // A browser without a WebP encoder answers PNG: take JPEG instead.
  return webp?.type === 'image/webp' ? webp : encode('image/jpeg');
}

/** Uploads a thumbnail of the canvas through the splat-images route; its fileUrl, or null when
 * there is nothing to capture. A failure is the caller's to judge (a thumbnail never blocks a
 * save). */
export async function uploadThumbnail(api: Api, canvas: HTMLCanvasElement): Promise<string | null> {
  const blob = await captureThumbnail(canvas);
  if (!blob) return null;
  const { body } = await api.call('POST', '/api/embed/editor/uploads/splat-images', {
    thumbnail: { contentType: blob.type, fileSize: blob.size },
  });
  await putSigned(body.thumbnail.uploadUrl, blob, blob.type);
  return body.thumbnail.fileUrl as string;
}
