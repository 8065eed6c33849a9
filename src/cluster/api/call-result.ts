/** What a slurmrestd call resolves to: decoded data or a counted failure, with its timing. */
import { performance } from 'node:perf_hooks';
import type { DecodedOk } from '../model.js';
import { CallError, type CallFailure } from '../http/failure.js';
import type { RequestStats } from '../http/transport.js';
import type { SupportedVersion } from './decode/versions.js';

export interface CallTiming {
  readonly startedAtMs: number;
  readonly durationMs: number;
  /** HTTP requests made for this call, including retries, re-authentication and negotiation. */
  readonly attempts: number;
  /** Body bytes received (after decompression). */
  readonly bytes: number;
}

export type CallResult<T> =
  | { readonly ok: true; readonly data: DecodedOk<T>; readonly version: SupportedVersion; readonly timing: CallTiming }
  | {
      readonly ok: false;
      readonly failure: CallFailure;
      readonly version?: SupportedVersion;
      readonly timing: CallTiming;
    };

export interface CallOptions<T = never> {
  readonly signal?: AbortSignal;
  /** Sees each element of a list response as it is decoded (a retried attempt's too). */
  readonly onItem?: (item: T) => void;
}

export interface AccountingQuery {
  readonly cluster?: string;
  /** Unix seconds or a Date. */
  readonly startTime: number | Date;
  readonly endTime: number | Date;
}

/** The data of a successful call, or a CallError. */
export function orThrow<T>(result: CallResult<T>): DecodedOk<T> {
  if (result.ok) return result.data;
  throw new CallError(result.failure);
}

/** Starts timing a call; stop() adds the requests and bytes it took. */
export function startClock(): { stop(stats: RequestStats): CallTiming } {
  const startedAtMs = Date.now();
  const t0 = performance.now();
  return {
    stop: (stats) => ({
      startedAtMs,
      durationMs: performance.now() - t0,
      attempts: stats.attempts,
      bytes: stats.bytes,
    }),
  };
}
