/**
 * OTLP partial success: a receiver that answers 200 may still have refused some of the points
 * (`partialSuccess.rejectedDataPoints`). The SDK's exporter calls such an answer a success and only
 * reports the refusal to its diagnostic logger, one warning per answer, before it hands the result
 * to our callback. The diagnostic logger (pipeline.ts) notes the refusal here instead of logging
 * it, and the exporter's callback, which the SDK calls next in the same synchronous run, takes it:
 * no other export's answer can come in between. A note nobody takes is dropped at the end of that
 * run, so it can never be attributed to a later push.
 */

/** What a receiver refused of one request. */
export interface Rejection {
  /** Points refused (0 when the receiver only warned). */
  readonly points: number;
  /** The receiver's reason, as it gave it (may be empty). */
  readonly message: string;
}

/** The SDK's diagnostic line for an answer carrying `partialSuccess` (its argument is that object as JSON). */
export const PARTIAL_SUCCESS_DIAG_RE = /^Received Partial Success response/;

let pending: Rejection | undefined;

/** The partialSuccess object of the answer being handled, from the SDK's diagnostic argument. */
export function parsePartialSuccess(arg: unknown): Rejection {
  let parsed: unknown = arg;
  if (typeof arg === 'string') {
    try {
      parsed = JSON.parse(arg);
    } catch {
      return { points: 0, message: arg };
    }
  }
  const o = (parsed ?? {}) as { rejectedDataPoints?: unknown; errorMessage?: unknown };
  // int64 arrives as a string from JSON answers and as a number (or Long-like) from protobuf ones.
  const points = Number(String(o.rejectedDataPoints ?? 0));
  return {
    points: Number.isFinite(points) && points > 0 ? Math.floor(points) : 0,
    message: typeof o.errorMessage === 'string' ? o.errorMessage : '',
  };
}

/** Notes the partial success of the answer the SDK is handling now, for the export callback that follows. */
export function notePartialSuccess(arg: unknown): void {
  const rejection = parsePartialSuccess(arg);
  pending = rejection;
  queueMicrotask(() => {
    if (pending === rejection) pending = undefined;
  });
}

/** The partial success noted for the answer whose callback runs now, if any (taken once). */
export function takePartialSuccess(): Rejection | undefined {
  const r = pending;
  pending = undefined;
  return r;
}

/** Two requests' refusals as one push's. */
export function addRejections(a: Rejection | undefined, b: Rejection | undefined): Rejection | undefined {
  if (a === undefined) return b;
  if (b === undefined) return a;
  return { points: a.points + b.points, message: b.message || a.message };
}
