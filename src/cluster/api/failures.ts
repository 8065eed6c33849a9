/**
 * Failure classification of slurmrestd calls: what went wrong, as one of the kinds the collectors
 * count (http/failure.ts), with a one-line message for the logs. Here is what is slurmrestd's own:
 * what its statuses and `errors[]` say about the token.
 */
import { AuthError, type CallFailure, type FailureKind, transportFailureKind } from '../http/failure.js';
import { HttpStatusError } from '../http/transport.js';
import type { ApiMessage, DecodedOk, Decoded } from '../model.js';
import type { TokenSource } from './http/auth.js';
import { describeMessages, readMessages } from './decode/envelope.js';

/**
 * Slurm errnos that mean "the credential was not accepted": SLURM_PROTOCOL_AUTHENTICATION_ERROR
 * (1007, what 22.05 reports for a bad or expired JWT) and the ESLURM_AUTH_* block (6000–6099).
 */
const AUTH_ERRNOS = (n: number): boolean => n === 1007 || (n >= 6000 && n < 6100);
const AUTH_TEXT = /authenticat|credential|\btoken\b|expired|\bjwt\b/i;

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
  if (!(err instanceof HttpStatusError)) return false;
  if (err.status === 401) return true;
  return err.status === 500 && errorBodyMessages(err.body).some((m) => isAuthMessage(m) || isOpaqueRejection(m));
}

export function isAuthFailure(err: HttpStatusError): boolean {
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
  if (err instanceof HttpStatusError) return httpFailure(err, tokens);
  const kind = transportFailureKind(err);
  if (kind !== undefined) return { kind, message: (err as Error).message, errors: [] };
  return {
    kind: 'internal',
    message: `unexpected error: ${err instanceof Error ? err.message : String(err)}`,
    errors: [],
  };
}

function httpFailure(err: HttpStatusError, tokens: TokenSource): CallFailure {
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
