// Retries with exponential backoff and full jitter: the Go SDK's rules (sdk/go/README.md).

/** How a retryable request is repeated after a 5xx, a network error or a 429 RATE_LIMITED. */
export interface RetryPolicy {
  /** Counts the first attempt; 1 disables retries. */
  maxAttempts: number;
  /** The ceiling of the first wait, in ms. */
  initialBackoffMs: number;
  /** Caps every wait, a Retry-After one included, in ms. */
  maxBackoffMs: number;
  /** Grows the ceiling after each attempt (2 doubles it). */
  multiplier: number;
}

/** Four attempts within roughly two seconds of waiting: enough to ride out a restarting service without hiding an outage. */
export const DEFAULT_RETRY_POLICY: RetryPolicy = { maxAttempts: 4, initialBackoffMs: 200, maxBackoffMs: 5000, multiplier: 2 };

/** What one attempt reports when it fails: whether it may be repeated, and any wait the server asked for. */
export class AttemptFailure {
  constructor(readonly error: unknown, readonly retry: boolean, readonly waitMs = 0) {}
}

/** Resolves after ms, or rejects with the signal's reason when it aborts first. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) { reject(signal.reason); return; }
    const onAbort = () => { clearTimeout(t); reject(signal!.reason); };
    const t = setTimeout(() => { signal?.removeEventListener('abort', onAbort); resolve(); }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/**
 * Runs attempt until it succeeds, fails for good (an AttemptFailure with retry false, or any
 * other throw), or the attempts run out; the last error is thrown. `jitter` picks a wait in
 * [0, ceiling] (tests replace it).
 */
export async function withRetry<T>(policy: RetryPolicy, signal: AbortSignal | undefined,
  attempt: () => Promise<T>, jitter: (ceilingMs: number) => number = (c) => Math.random() * c): Promise<T> {
  let ceiling = policy.initialBackoffMs;
  for (let n = 1; ; n++) {
    try {
      return await attempt();
    } catch (thrown) {
      signal?.throwIfAborted();
      if (!(thrown instanceof AttemptFailure)) throw thrown;
      if (!thrown.retry || n >= policy.maxAttempts) throw thrown.error;
      let wait = Math.max(jitter(ceiling), thrown.waitMs);
      if (policy.maxBackoffMs > 0) wait = Math.min(wait, policy.maxBackoffMs);
      await sleep(wait, signal);
      ceiling *= Math.max(policy.multiplier, 1);
      if (policy.maxBackoffMs > 0) ceiling = Math.min(ceiling, policy.maxBackoffMs);
    }
  }
}

/** A Retry-After header given in seconds, in ms (0 when absent). */
export function retryAfterMs(headers: { get(name: string): string | null }): number {
  const s = Number(headers.get('Retry-After'));
  return Number.isInteger(s) && s > 0 ? s * 1000 : 0;
}
