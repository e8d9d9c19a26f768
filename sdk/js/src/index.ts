/**
 * @splathost/sdk: the splathost REST client for Node (>= 20) and browsers, over fetch only, and
 * the webhook verifier (WebCrypto). See README.md.
 */
export * from './client.ts';
export * from './errors.ts';
export * from './retry.ts';
export * from './types.ts';
export * from './uploads.ts';
export * from './webhook.ts';
