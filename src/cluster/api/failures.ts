/**
 * Failure classification of slurmrestd calls: what went wrong, as one of a fixed set of kinds
 * that the collectors count, with a one-line message for the logs.
 */
import type { ApiMessage, DecodedOk, DecodeFailureKind, Decoded } from '../model.js';
import { AuthError, type TokenSource } from './http/auth.js';
import { describeMessages, readMessages } from './decode/envelope.js';
import { AbortedError, NetworkError, SlurmHttpError, TimeoutError, TooLargeError } from './http/transport.js';

/**
 * Slurm errnos that mean "the credential was not accepted": SLURM_PROTOCOL_AUTHENTICATION_ERROR
 * (1007, what 22.05 reports for a bad or expired JWT) and the ESLURM_AUTH_* block (6000–6099).
 */
const AUTH_ERRNOS = (n: number): boolean => n === 1007 || (n >= 6000 && n < 6100);
const AUTH_TEXT = /authenticat|credential|\btoken\b|expired|\bjwt\b/i;

/**
 * Why a call failed; `slurm_exporter_collector_error_kinds_total` counts runs by it:
 * - auth: credentials missing, rejected (401, 22.05's auth 500) after one renewal, or forbidden (403);
 * - http: any other HTTP status (502 after retries, a 500 without errors[]);
 * - absent: the endpoint answered 404 on an API version that serves others, or slurmrestd lists
 *   no /slurmdb/ version at all (see absent.ts);
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
  readonly errors: readonly ApiMessage[];
  /** Kind `absent` only: `new` when this call found the endpoint missing, `known` while it is remembered so. */
  readonly absence?: Absence;
}

export type Absence = 'new' | 'known';

/** Thrown by orThrow(): carries the failure so a caller that prefers exceptions can still count kinds. */
export class SlurmCallError extends Error {
  override readonly name = 'SlurmCallError';
  constructor(readonly failure: CallFailure) {
    super(failure.message);
  }
}

/** The kind of any error a sub-collector run ended with: a call's own, else a bug on our side. */
export function failureKindOf(err: unknown): FailureKind {
  return err instanceof SlurmCallError ? err.failure.kind : 'internal';
}

/** Whether an error a sub-collector run ended with is a missing endpoint, and a newly found one. */
export function absenceOf(err: unknown): Absence | undefined {
  return err instanceof SlurmCallError && err.failure.kind === 'absent' ? (err.failure.absence ?? 'new') : undefined;
}

export type Outcome<T> =
  { readonly ok: true; readonly value: T } | { readonly ok: false; readonly failure: CallFailure };

/** The messages of a JSON error body, or none when it is not JSON. */
export function errorBodyMessages(body: string): ApiMessage[] {
  try {
    const doc = JSON.parse(body) as unknown;
    return readMessages(
      typeof doc === 'object' && doc !== null ? (doc as Record<string, unknown>)['errors'] : undefined,
    );
  } catch {
    return [];
  }
}

/** Does a Slurm error message say the credential was refused? */
export function isAuthMessage(m: ApiMessage): boolean {
  if (m.error_number !== undefined && AUTH_ERRNOS(m.error_number)) return true;
  return AUTH_TEXT.test(`${m.error ?? ''} ${m.description ?? ''}`);
}

/**
 * Measured on Slurm 22.05.8: a bad, expired or malformed token is answered 500 with
 * `errors: [{error: "Unspecified error", errno: -1}]` (slurmctld refused the RPC; slurmrestd
 * does not say why). That answer means little else there, so it is treated as a refused token.
 */
function isOpaqueRejection(m: ApiMessage): boolean {
  return m.error_number === -1 || /^unspecified error$/i.test(m.error ?? '');
}

/** 401, or a 500 whose errors[] say (or, on 22.05, imply) the token was refused: worth renewing it. */
export function isTokenRejection(err: unknown): boolean {
  if (!(err instanceof SlurmHttpError)) return false;
  if (err.status === 401) return true;
  return err.status === 500 && errorBodyMessages(err.body).some((m) => isAuthMessage(m) || isOpaqueRejection(m));
}

export function isAuthFailure(err: SlurmHttpError): boolean {
  return err.status === 403 || isTokenRejection(err);
}

export function fromDecoded<T>(d: Decoded<T>, path: string): Outcome<DecodedOk<T>> {
  if (d.ok) return { ok: true, value: d };
  // Counted as auth, not as a Slurm-side error, should a release report a refused token in a 2xx envelope.
  const kind: FailureKind = d.kind !== 'api_errors' ? 'decode' : d.errors.some(isAuthMessage) ? 'auth' : 'api_errors';
  return failure(kind, `GET ${path}: ${d.message}`, { decodeKind: d.kind, errors: d.errors });
}

export function failure(
  kind: FailureKind,
  message: string,
  extra: Partial<Omit<CallFailure, 'kind' | 'message'>> = {},
): { ok: false; failure: CallFailure } {
  return { ok: false, failure: { kind, message, errors: [], ...extra } };
}

/** Maps anything thrown below the client to a counted failure. */
export function toFailure(err: unknown, tokens: TokenSource): CallFailure {
  if (err instanceof AuthError)
    return { kind: 'auth', message: `credentials (${tokens.describe()}): ${err.message}`, errors: [] };
  if (err instanceof SlurmHttpError) return httpFailure(err, tokens);
  if (err instanceof TimeoutError) return { kind: 'timeout', message: err.message, errors: [] };
  if (err instanceof TooLargeError) return { kind: 'too_large', message: err.message, errors: [] };
  if (err instanceof NetworkError) return { kind: 'network', message: err.message, errors: [] };
  if (err instanceof AbortedError) return { kind: 'aborted', message: err.message, errors: [] };
  return {
    kind: 'internal',
    message: `unexpected error: ${err instanceof Error ? err.message : String(err)}`,
    errors: [],
  };
}

function httpFailure(err: SlurmHttpError, tokens: TokenSource): CallFailure {
  const errors = errorBodyMessages(err.body);
  const slurm = errors.length > 0 ? `: ${describeMessages(errors)}` : '';
  const base = { status: err.status, errors };
  if (err.status === 403)
    return { kind: 'auth', message: `${err.message} (forbidden for ${tokens.describe()})${slurm}`, ...base };
  if (isTokenRejection(err))
    return {
      kind: 'auth',
      message: `${err.message}: token rejected even after renewal (${tokens.describe()})${slurm}`,
      ...base,
    };
  if (errors.length > 0) return { kind: 'api_errors', message: `${err.message}${slurm}`, ...base };
  const ct = err.contentType !== undefined ? ` (${err.contentType.split(';')[0]})` : '';
  return { kind: 'http', message: `${err.message}${ct}`, ...base };
}
