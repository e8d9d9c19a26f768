// The embed page's first script (services/session/pages.go): requests the page's scene record
// at once, while the page's own module, its chunks and the engine are still loading, so the
// record is in before the engine has started (docs/embeds.md, "Pages"). It imports nothing but
// types, so no chunk stands between the page and that request; Api.splat takes the answer.
import type { Boot } from './api.ts';

try {
  const boot = JSON.parse(document.getElementById('splathost-boot')?.textContent || 'null') as Boot | null;
  if (boot && boot.splatId && typeof boot.sessionToken === 'string') {
    const path = `/api/embed/splats/${encodeURIComponent(boot.splatId)}`;
    const response = fetch(path, { headers: { Authorization: `Bearer ${boot.sessionToken}` } });
    // A failure is the page module's to report, when it takes the answer.
    response.catch(() => {});
    window.splathostScene = { path, token: boot.sessionToken, response };
  }
} catch {
  // A malformed boot block: the page's module reports it.
}
