// Builds the package into dist/: tsc typechecks src/ and emits one ES module and one .d.ts per
// source file (the './x.ts' imports rewritten to './x.js'). TypeScript comes from the web/
// workspace's node_modules, so the package has no dependencies of its own.
import { execFileSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = dirname(fileURLToPath(import.meta.url));

/** Builds sdk/js/dist; the web build calls it for the webhook module's types. */
export function buildPackage() {
  const tsc = join(root, '..', '..', 'web', 'node_modules', 'typescript', 'bin', 'tsc');
  rmSync(join(root, 'dist'), { recursive: true, force: true });
  execFileSync(process.execPath, [tsc, '-p', root, '--noEmit', 'false', '--declaration', '--allowImportingTsExtensions', 'false',
    '--rewriteRelativeImportExtensions', '--outDir', join(root, 'dist')], { stdio: 'inherit' });
}

if (process.argv[1] === fileURLToPath(import.meta.url)) buildPackage();
