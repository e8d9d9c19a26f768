// The page's load events (docs/embeds.md, "Load events"): firstFrame once the whole scene has
// been drawn (a streamed scene's coarsest level everywhere), fullDetail once every level the
// view needs has, each with the bytes the page had fetched and the milliseconds since its
// navigation. They are written on <html> (data-splathost-first-frame-bytes, -ms, and
// data-splathost-full-detail-bytes, -ms), and the viewer posts them to its host.
import type { LoadFigures } from '../../sdk/src/protocol.ts';

export type { LoadFigures };

/** The load events, in the order they fire. */
export type Milestone = 'firstFrame' | 'fullDetail';

// A streamed scene fetches a file per part and level: keep every entry, not the browser's
// default of 250, so the bytes count them all.
performance.setResourceTimingBufferSize(100_000);

/** The bytes the page has fetched over the network so far: its own document and every resource
 * the browser has finished fetching for it, as Resource Timing reports their transfer (encoded
 * bodies with their headers; 0 for what a cache answered). */
export function pageBytes(): number {
  let total = 0;
  for (const type of ['navigation', 'resource']) {
    for (const e of performance.getEntriesByType(type) as PerformanceResourceTiming[]) total += e.transferSize;
  }
  return total;
}

/** The figures of a milestone reached now. */
export function figuresNow(): LoadFigures {
  return { bytes: pageBytes(), ms: Math.round(performance.now()) };
}

const ATTR: Record<Milestone, string> = { firstFrame: 'splathostFirstFrame', fullDetail: 'splathostFullDetail' };

/** Writes a milestone's figures on <html> (data-splathost-first-frame-bytes="…" and -ms). */
export function markMilestone(name: Milestone, figures: LoadFigures): void {
  const data = document.documentElement.dataset;
  data[`${ATTR[name]}Bytes`] = String(figures.bytes);
  data[`${ATTR[name]}Ms`] = String(figures.ms);
}
