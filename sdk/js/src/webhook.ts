/**
 * splathost webhook verification: checks a delivery's Standard Webhooks signature before its body
 * is trusted. It uses WebCrypto only, so it runs on Node (>= 20), Deno, Bun, edge workers and
 * anywhere else with `crypto.subtle`; it belongs on the integrator's server all the same, since
 * the endpoint's secret must never reach a browser. The npm package `@splathost/sdk` exports it
 * (and from `@splathost/sdk/webhook` alone); the gateway serves the same module at
 * /sdk/splathost-webhook.js.
 *
 *   import { verifyWebhook } from '@splathost/sdk/webhook';
 *   const event = await verifyWebhook(process.env.WEBHOOK_SECRET, req.headers, rawBody); // throws if forged
 */
/** How far a delivery's webhook-timestamp may be from the receiver's clock, in seconds. */
export const WEBHOOK_TOLERANCE_SECONDS = 5 * 60;

/** Every event type a delivery may carry. */
export type WebhookEventType =
  | 'splat.created' | 'splat.updated' | 'splat.published' | 'splat.ready' | 'splat.deleted'
  | 'clone.succeeded' | 'clone.failed' | 'externalUser.deleted'
  | 'retention.archived' | 'retention.restored' | 'retention.purged';

/** A scene reference: the data of splat.deleted and the retention events. */
export interface SceneRef { splatId: string; externalUserId: string }

/** The data of each event type. `splat` is the API's list item. */
export interface WebhookEventDataMap {
  'splat.created': { splat: Record<string, unknown> };
  'splat.updated': { splat: Record<string, unknown> };
  'splat.published': { splat: Record<string, unknown> };
  'splat.ready': { splat: Record<string, unknown> };
  'splat.deleted': SceneRef;
  'clone.succeeded': { jobId: string; splatId: string; sourceSplatId: string };
  'clone.failed': { jobId: string; sourceSplatId: string; message: string };
  'externalUser.deleted': { externalUserId: string };
  'retention.archived': SceneRef;
  'retention.restored': SceneRef;
  'retention.purged': SceneRef;
}

/**
 * A verified delivery's body. Deduplicate by the webhook-id header: it may arrive twice. After a
 * receiver outage one scene's events may arrive in any order: `sequence` orders the events of one
 * resource (see webhookResource and WebhookOrder); it is not contiguous and orders nothing across
 * resources. A body recorded before sequences existed has none: count it as 0.
 */
export type WebhookEvent = {
  [T in WebhookEventType]: { type: T; timestamp: string; sequence: number; data: WebhookEventDataMap[T] }
}[WebhookEventType];

/**
 * The resource whose changes an event's `sequence` orders: `splat/<id>` for the splat.* and
 * retention.* events and clone.succeeded (the copy), `cloneJob/<jobId>` for clone.failed,
 * `externalUser/<id>` for externalUser.deleted.
 */
export function webhookResource(event: WebhookEvent): string {
  const d = event.data as { splat?: { id?: unknown }; splatId?: unknown; jobId?: unknown; externalUserId?: unknown };
  let kind = '';
  let id: unknown;
  switch (event.type) {
    case 'splat.created': case 'splat.updated': case 'splat.published': case 'splat.ready':
      kind = 'splat/'; id = d.splat?.id; break;
    case 'splat.deleted': case 'retention.archived': case 'retention.restored': case 'retention.purged':
    case 'clone.succeeded':
      kind = 'splat/'; id = d.splatId; break;
    case 'clone.failed': kind = 'cloneJob/'; id = d.jobId; break;
    case 'externalUser.deleted': kind = 'externalUser/'; id = d.externalUserId; break;
  }
  if (typeof id !== 'string' || id === '') throw new Error(`webhook: ${String(event.type)} names no resource`);
  return kind + id;
}

/**
 * The ordering rule of a receiver: per resource keep the highest sequence seen, and ignore an
 * event whose sequence is not higher (older, or the same event again). A deletion counts too, so
 * a creation or update arriving after it does not bring the scene back. It keeps its numbers in
 * memory; a receiver with a database stores the number with its record of the resource and
 * applies an event in one conditional write (… WHERE id = $id AND sequence < $n).
 */
export class WebhookOrder {
  private readonly seen = new Map<string, number>();

  /** True when the event is newer than all applied before for its resource (and remembers it). */
  apply(event: WebhookEvent): boolean {
    const r = webhookResource(event);
    const seq = typeof event.sequence === 'number' ? event.sequence : 0;
    const last = this.seen.get(r);
    if (last !== undefined && seq <= last) return false;
    this.seen.set(r, seq);
    return true;
  }
}

/** Thrown when a delivery does not verify; `reason` says why (never the secret). */
export class WebhookVerificationError extends Error {
  constructor(readonly reason: 'headers' | 'timestamp' | 'signature' | 'secret') {
    super(`webhook verification failed: ${reason}`);
    this.name = 'WebhookVerificationError';
  }
}

/** The headers of a delivery: Node's IncomingHttpHeaders, a plain record, or a fetch Headers. */
export type WebhookHeaders = Record<string, string | string[] | undefined> | { get(name: string): string | null };

function header(h: WebhookHeaders, name: string): string {
  if (typeof (h as { get?: unknown }).get === 'function') {
    return (h as { get(name: string): string | null }).get(name) ?? '';
  }
  const rec = h as Record<string, string | string[] | undefined>;
  const v = rec[name] ?? Object.entries(rec).find(([k]) => k.toLowerCase() === name)?.[1];
  return Array.isArray(v) ? (v[0] ?? '') : (v ?? '');
}

/** Standard base64 to bytes; null when it is not base64. */
function fromBase64(s: string): Uint8Array<ArrayBuffer> | null {
  try {
    return Uint8Array.from(atob(s), (c) => c.charCodeAt(0));
  } catch {
    return null;
  }
}

/**
 * Verifies a delivery with the endpoint's secret (`whsec_…`) and resolves with its parsed body:
 * the timestamp within WEBHOOK_TOLERANCE_SECONDS of now and one of the space-separated `v1,`
 * signatures (two during a rotation) equal to base64(HMAC-SHA256(key, id + "." + timestamp + "."
 * + body)), checked by WebCrypto's HMAC verify (a constant-time comparison). Pass the raw body,
 * not a re-serialized one. It rejects with a WebhookVerificationError when the delivery does not
 * verify.
 */
export async function verifyWebhook(secret: string, headers: WebhookHeaders, body: string | Uint8Array,
  nowSeconds: number = Math.floor(Date.now() / 1000)): Promise<WebhookEvent> {
  if (!secret.startsWith('whsec_')) throw new WebhookVerificationError('secret');
  const keyBytes = fromBase64(secret.slice('whsec_'.length));
  if (keyBytes === null || keyBytes.length === 0) throw new WebhookVerificationError('secret');
  const id = header(headers, 'webhook-id');
  const ts = header(headers, 'webhook-timestamp');
  const sigs = header(headers, 'webhook-signature');
  if (!id || !ts || !sigs) throw new WebhookVerificationError('headers');
  if (!/^\d+$/.test(ts) || Math.abs(nowSeconds - Number(ts)) > WEBHOOK_TOLERANCE_SECONDS) {
    throw new WebhookVerificationError('timestamp');
  }
  const raw = typeof body === 'string' ? new TextEncoder().encode(body) : Uint8Array.from(body);
  const prefix = new TextEncoder().encode(`${id}.${ts}.`);
  const signed = new Uint8Array(prefix.length + raw.length);
  signed.set(prefix);
  signed.set(raw, prefix.length);
  const key = await globalThis.crypto.subtle.importKey('raw', keyBytes, { name: 'HMAC', hash: 'SHA-256' }, false, ['verify']);
  for (const s of sigs.split(' ')) {
    const [version, sig] = s.split(',', 2);
    if (version !== 'v1' || !sig) continue;
    const got = fromBase64(sig);
    if (got !== null && await globalThis.crypto.subtle.verify('HMAC', key, got, signed)) {
      return JSON.parse(new TextDecoder().decode(raw)) as WebhookEvent;
    }
  }
  throw new WebhookVerificationError('signature');
}
