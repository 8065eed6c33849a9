/**
 * Why a call to an API failed, in words every client of the HTTP layer shares (slurmrestd's in
 * api/, the Kubernetes API's in kubernetes/): the kinds the sub-collectors count, the error a
 * failed call throws, and how the transport's own errors map onto those kinds. What an HTTP
 * status means is each client's business (a 500 with Slurm's errors[], a 403 for a list).
 */
import type { ApiMessage, DecodeFailureKind } from '../model.js';
import { AbortedError, NetworkError, TimeoutError, TooLargeError } from './transport.js';

/**
 * Why a call failed; `slurm_exporter_collector_error_kinds_total` counts runs by it:
 * - auth: credentials missing, rejected (401, 22.05's auth 500) after one renewal, or forbidden (403);
 * - http: any other HTTP status (502 after retries, a 500 without errors[]);
 * - absent: the endpoint answered 404 on an API version that serves others, or slurmrestd lists
 *   no /slurmdb/ version at all (see api/absent.ts);
 * - version: no API version both sides know, or the requested one is not served;
 * - decode: not JSON, truncated, or JSON without the expected data;
 * - api_errors: Slurm answered with `errors[]` and no data;
 * - internal: a bug on our side, reported rather than thrown so one endpoint cannot take down a cycle.
 */
export const FAILURE_KINDS = [
  'auth',
  'timeout',
  'network',
  'too_large',
  'http',
  'absent',
  'version',
  'decode',
  'api_errors',
  'aborted',
  'internal',
] as const;
export type FailureKind = (typeof FAILURE_KINDS)[number];

export interface CallFailure {
  readonly kind: FailureKind;
  /** One line for logs; names the URL path, never a credential. */
  readonly message: string;
  readonly status?: number;
  readonly decodeKind?: DecodeFailureKind;
  /** Slurm's `errors[]`, when slurmrestd gave any; empty for every other API. */
  readonly errors: readonly ApiMessage[];
  /** Kind `absent` only: `new` when this call found the endpoint missing, `known` while it is remembered so. */
  readonly absence?: Absence;
}

export type Absence = 'new' | 'known';

/** A failed call, thrown: carries the failure so a caller that prefers exceptions can still count kinds. */
export class CallError extends Error {
  override readonly name = 'CallError';
  constructor(readonly failure: CallFailure) {
    super(failure.message);
  }
}

/** No credential could be produced (unreadable file, scontrol failed, Secret missing, bad kubeconfig...). */
export class AuthError extends Error {
  override readonly name = 'AuthError';
}

/** Removes anything that looks like a JWT, a bearer token or a `SLURM_JWT=` assignment from outside text. */
export function redact(text: string): string {
  return text
    .replace(/SLURM_JWT=\S*/g, 'SLURM_JWT=<redacted>')
    .replace(/eyJ[\w-]*\.[\w-]*\.[\w-]*/g, '<redacted-jwt>')
    .replace(/(bearer\s+)\S+/gi, '$1<redacted>');
}

/** The kind of any error a sub-collector run ended with: a call's own, else a bug on our side. */
export function failureKindOf(err: unknown): FailureKind {
  return err instanceof CallError ? err.failure.kind : 'internal';
}

/** Whether an error a sub-collector run ended with is a missing endpoint, and a newly found one. */
export function absenceOf(err: unknown): Absence | undefined {
  return err instanceof CallError && err.failure.kind === 'absent' ? (err.failure.absence ?? 'new') : undefined;
}

/**
 * The kind of a failure below any HTTP status: credentials, timeout, size cap, network, abort.
 * Undefined for an HTTP status (the client judges it) and for anything else (a bug).
 */
export function transportFailureKind(err: unknown): FailureKind | undefined {
  if (err instanceof AuthError) return 'auth';
  if (err instanceof TimeoutError) return 'timeout';
  if (err instanceof TooLargeError) return 'too_large';
  if (err instanceof NetworkError) return 'network';
  if (err instanceof AbortedError) return 'aborted';
  return undefined;
}
