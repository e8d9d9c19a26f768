/**
 * splathost embed SDK: mounts the viewer or editor embed in an iframe and relays the editor's
 * browser messages (docs/embeds.md). One ES module, also served at /sdk/splathost-embed.js.
 *
 * The message protocol is defined here too (protocol.ts); the embed bundles import it, so both
 * sides share one definition.
 */
export * from './protocol.ts';
export * from './mount.ts';
export * from './upload.ts';
