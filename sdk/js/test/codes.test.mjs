// ErrorCodes is the ErrorCode enum of api/openapi.yaml, the one source of the interface: every
// code an answer may carry, and nothing else (the editor room's frame-only codes are left out:
// the REST client never sees them).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ErrorCodes } from '../dist/index.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
const yaml = createRequire(join(root, 'web', 'node_modules', 'noop.js'))('js-yaml');
const ROOM_ONLY = ['SESSION_EXPIRED', 'EDITOR_DISABLED', 'READ_ONLY', 'SERVER_ONLY', 'ROOM_FULL', 'MESSAGE_TOO_LARGE',
  'TOO_MANY_SOCKETS', 'SEAT_TAKEN'];

test('ErrorCodes holds every REST code of the ErrorCode enum, and only those', () => {
  const doc = yaml.load(readFileSync(join(root, 'api', 'openapi.yaml'), 'utf8'));
  const enumCodes = doc.components.schemas.ErrorCode.enum.filter((c) => !ROOM_ONLY.includes(c)).sort();
  assert.deepEqual(Object.values(ErrorCodes).sort(), enumCodes);
});
