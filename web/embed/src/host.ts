// The host page of an embed: which origin its messages go to and come from (docs/embeds.md,
// contract item 8). The editor and the viewer follow the same rules.

/**
 * The origin of the page that frames the embed, as the browser reports it: the first of
 * `location.ancestorOrigins` where the browser has it (Chromium, Safari), else the origin of
 * `document.referrer` (the page that navigated this frame: the host, which set the iframe's src;
 * the SDK sends its origin as the referrer). Null when the browser reports nothing usable.
 */
export function framingOrigin(): string | null {
  const ancestors = location.ancestorOrigins;
  if (ancestors && ancestors.length > 0) {
    return ancestors[0] === 'null' ? null : ancestors[0];
  }
  if (!document.referrer) return null;
  try {
    const origin = new URL(document.referrer).origin;
    return origin === 'null' ? null : origin;
  } catch {
    return null;
  }
}

/**
 * The host origin messages go to and come from, or null when the embed must not post at all
 * (docs/embeds.md, contract item 8). A raw iframe host (no SDK, no hostOrigin parameter) gets its
 * events at the origin the browser reports for the framing page; the SDK's hostOrigin parameter,
 * when given, must be exactly that origin, so a page cannot name another origin to receive the
 * events of an embed it frames. `kind` names the embed in the console's explanations.
 */
export function hostOrigin(kind: 'editor' | 'viewer', params: URLSearchParams): string | null {
  if (window.parent === window) {
    console.warn(`splathost ${kind}: not framed; events are not posted`);
    return null;
  }
  const reported = framingOrigin();
  if (!reported) {
    console.warn(`splathost ${kind}: the browser reports no framing origin; events are not posted`);
    return null;
  }
  const given = params.get('hostOrigin');
  if (given !== null && given !== reported) {
    console.warn(`splathost ${kind}: hostOrigin does not match the framing page; events are not posted:`, given);
    return null;
  }
  return reported;
}
