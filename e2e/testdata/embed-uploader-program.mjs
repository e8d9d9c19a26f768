// The embed SDK's uploader as a browser page would use it, run in Node by e2e/jssdk_test.go
// (TestEmbedUploaderSmallFile): the built module the gateway serves at /sdk/splathost-embed.js,
// a customer's editor session, and a scene file below the multipart minimum. It prints one JSON
// line: the result, each PUT (whether it was a part) and the events.
import { openAsBlob } from 'node:fs';
import { basename } from 'node:path';
import { pathToFileURL } from 'node:url';

const { SDK, SPLATHOST_URL, SESSION, FILE } = process.env;
const { createUploader } = await import(pathToFileURL(SDK).href);
const blob = await openAsBlob(FILE);
const file = { name: basename(FILE), size: blob.size, slice: (a, b) => blob.slice(a, b) };
const puts = [];
const events = [];
const up = createUploader({
  baseUrl: SPLATHOST_URL, sessionToken: SESSION,
  fetch: (url, init) => {
    if (init?.method === 'PUT') puts.push({ part: new URL(String(url)).searchParams.has('partNumber') });
    return fetch(url, init);
  },
});
up.on('uploadId', (e) => events.push({ uploadId: e.uploadId }));
up.on('progress', (p) => events.push({ bytesDone: p.bytesDone, partsTotal: p.partsTotal }));
const result = await up.upload(file);
console.log(JSON.stringify({ result, puts, events }));
