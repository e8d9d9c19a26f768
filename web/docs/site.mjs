// Renders the repository's Markdown documents (docs/*.md, docs/guides/*.md) into the docs site the
// gateway serves beside the API reference: /docs/guides (the index), /docs/guides/<name> and
// /docs/<name>. The pages are plain HTML with one stylesheet from /docs/assets and no script, so
// they load nothing from another host. Links between documents are rewritten to site paths and a
// link to a document that does not exist fails the build, as does a fragment no heading makes.
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, posix } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const require = createRequire(join(here, 'package.json'));
const { marked } = require('marked');

/** The order of the reference pages in the navigation (any other docs/*.md follows). */
const REFERENCE = ['embeds', 'operations', 'security', 'benchmarks', 'testing', 'architecture'];

/** A heading's anchor as GitHub makes it, so the same links work on GitHub and on the site. */
export function slug(text) {
  return text.toLowerCase().trim()
    .replace(/<[^>]*>/g, '')
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

/** The documents of the site: repository path, site path and title (the first heading). */
export function listPages(repo) {
  const pages = [];
  const add = (dir, urlBase) => {
    for (const f of readdirSync(join(repo, dir)).filter((n) => n.endsWith('.md')).sort()) {
      const file = posix.join(dir, f);
      const text = readFileSync(join(repo, file), 'utf8');
      const title = (text.match(/^# (.+)$/m) ?? [null, f])[1].replace(/`/g, '');
      pages.push({ file, url: `${urlBase}/${f.slice(0, -3)}`, title, text });
    }
  };
  add('docs/guides', '/docs/guides');
  add('docs', '/docs');
  const rank = (p) => (p.url.startsWith('/docs/guides/') ? -1 : (REFERENCE.indexOf(p.url.slice(6)) + 1 || 99));
  return pages.sort((a, b) => rank(a) - rank(b));
}

const escapeHtml = (s) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');

/** Renders one document's Markdown; returns its HTML, its anchors and its links to other pages. */
function render(page, byFile) {
  const anchors = new Set();
  const links = [];
  const renderer = new marked.Renderer();
  renderer.heading = (text, level, raw) => {
    const base = slug(raw);
    let id = base;
    for (let n = 1; anchors.has(id); n++) id = `${base}-${n}`;
    anchors.add(id);
    return `<h${level} id="${id}"><a class="anchor" href="#${id}">#</a>${text}</h${level}>\n`;
  };
  renderer.link = (href, title, text) => {
    const t = title ? ` title="${escapeHtml(title)}"` : '';
    if (/^[a-z][a-z0-9+.-]*:/i.test(href) || href.startsWith('/')) {
      return `<a href="${escapeHtml(href)}"${t}>${text}</a>`;
    }
    const [path, fragment = ''] = href.split('#');
    if (path === '') {
      links.push({ url: page.url, fragment });
      return `<a href="#${escapeHtml(fragment)}"${t}>${text}</a>`;
    }
    const target = posix.normalize(posix.join(posix.dirname(page.file), path));
    const to = byFile.get(target);
    if (!to) {
      if (target.startsWith('docs/') && target.endsWith('.md')) {
        throw new Error(`${page.file}: the link ${href} names no document`);
      }
      // A file of the repository outside the docs: named, not linked (the site serves no source).
      return `<span class="repo-path" title="${escapeHtml(target)} in the repository">${text}</span>`;
    }
    links.push({ url: to.url, fragment });
    return `<a href="${to.url}${fragment ? `#${escapeHtml(fragment)}` : ''}"${t}>${text}</a>`;
  };
  const html = marked.parse(page.text, { renderer, gfm: true, mangle: false, headerIds: false });
  return { html, anchors, links };
}

function layout(pages, current, title, body) {
  const item = (p) => `<li><a href="${p.url}"${p.url === current ? ' aria-current="page"' : ''}>${escapeHtml(p.title)}</a></li>`;
  const guides = pages.filter((p) => p.url.startsWith('/docs/guides/'));
  const reference = pages.filter((p) => !p.url.startsWith('/docs/guides/'));
  return `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <title>${escapeHtml(title)} · splathost docs</title>
  <link rel="icon" href="data:,">
  <link rel="stylesheet" href="/docs/assets/site.css">
</head>
<body>
  <nav class="sidebar" aria-label="Documentation">
    <a class="home" href="/docs/guides"${current === '/docs/guides' ? ' aria-current="page"' : ''}>splathost docs</a>
    <h2>Guides</h2>
    <ul>${guides.map(item).join('')}</ul>
    <h2>Reference</h2>
    <ul><li><a href="/docs">API reference</a></li>${reference.map(item).join('')}</ul>
  </nav>
  <main>
${body}
  </main>
</body>
</html>
`;
}

/**
 * Writes the site into `<dist>/docs/site` (guides/index.html, guides/<name>.html, <name>.html)
 * and its stylesheet into `<dist>/docs/assets/site.css`. Throws on a link to a missing document
 * or a missing anchor.
 */
export function buildSite(dist, repo) {
  const pages = listPages(repo);
  const byFile = new Map(pages.map((p) => [p.file, p]));
  const rendered = new Map();
  for (const p of pages) rendered.set(p.url, render(p, byFile));
  const index = {
    url: '/docs/guides',
    html: `<h1 id="splathost-docs">splathost docs</h1>
<p>Guides for integrators and operators, rendered from the repository's <code>docs/</code>, beside
the <a href="/docs">API reference</a> (every endpoint, field and error).</p>
<h2 id="guides">Guides</h2>
<ul>${pages.filter((p) => p.url.startsWith('/docs/guides/')).map((p) => `<li><a href="${p.url}">${escapeHtml(p.title)}</a></li>`).join('')}</ul>
<h2 id="reference">Reference</h2>
<ul><li><a href="/docs">API reference</a></li>${pages.filter((p) => !p.url.startsWith('/docs/guides/')).map((p) => `<li><a href="${p.url}">${escapeHtml(p.title)}</a></li>`).join('')}</ul>`,
  };
  const problems = [];
  for (const [url, r] of rendered) {
    for (const l of r.links) {
      if (l.fragment && !rendered.get(l.url).anchors.has(l.fragment)) {
        problems.push(`${url}: #${l.fragment} is no heading of ${l.url}`);
      }
    }
  }
  if (problems.length) throw new Error(`broken links in docs/:\n${problems.join('\n')}`);
  const out = join(dist, 'docs', 'site');
  mkdirSync(join(out, 'guides'), { recursive: true });
  writeFileSync(join(out, 'guides', 'index.html'), layout(pages, index.url, 'Guides', index.html));
  for (const p of pages) {
    const file = p.url === '/docs/guides' ? 'guides/index.html' : `${p.url.slice('/docs/'.length)}.html`;
    writeFileSync(join(out, file), layout(pages, p.url, p.title, rendered.get(p.url).html));
  }
  mkdirSync(join(dist, 'docs', 'assets'), { recursive: true });
  writeFileSync(join(dist, 'docs', 'assets', 'site.css'), readFileSync(join(here, 'src', 'site.css')));
  return pages.map((p) => p.url);
}
