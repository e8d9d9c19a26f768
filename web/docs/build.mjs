// Builds the docs site into dist/docs: the API reference page, its start script and Redoc's
// standalone bundle (React and all, one file), and the guides rendered from the repository's
// docs/ (site.mjs). The gateway serves /docs from it, so no page loads anything from another host.
import { copyFileSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildSite } from './site.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const require = createRequire(join(here, 'package.json'));

// The only remote asset the bundle names: the "API docs by Redocly" footer logo. An image that
// does not decode is hidden by Redoc's own onError, so the page shows the link text alone.
const remoteLogo = 'https://cdn.redoc.ly/redoc/logo-mini.svg';

/** Writes the API reference page and the guides into `<dist>/docs`. */
export function buildDocs(dist) {
  const out = join(dist, 'docs');
  rmSync(out, { recursive: true, force: true });
  mkdirSync(join(out, 'assets'), { recursive: true });
  const bundle = require.resolve('redoc/bundles/redoc.standalone.js');
  const code = readFileSync(bundle, 'utf8');
  if (!code.includes(remoteLogo)) {
    // A new Redoc may load other remote assets: check the page again before shipping it.
    throw new Error(`redoc.standalone.js no longer names ${remoteLogo}: review its remote assets`);
  }
  // The source map is not shipped (3 MB for a vendored bundle): drop its reference too.
  const shipped = code.replaceAll(remoteLogo, 'data:,').replace(/\n\/\/# sourceMappingURL=\S+\s*$/, '\n');
  writeFileSync(join(out, 'assets', 'redoc.standalone.js'), shipped);
  copyFileSync(`${bundle}.LICENSE.txt`, join(out, 'assets', 'redoc.standalone.js.LICENSE.txt'));
  copyFileSync(join(here, 'src', 'docs.js'), join(out, 'assets', 'docs.js'));
  copyFileSync(join(here, 'src', 'index.html'), join(out, 'index.html'));
  buildSite(dist, join(here, '..', '..'));
}
