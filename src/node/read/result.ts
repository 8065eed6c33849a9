/** What every reader of the node's files returns: a value, or a failure of a kind the agent counts. */

/**
 * gone: ENOENT/ESRCH (ended); denied: EACCES/EPERM; malformed: content unparsable or not a
 * regular file; too_large: more bytes than such a file can hold; io: anything else.
 */
export type FailureKind = 'gone' | 'denied' | 'malformed' | 'too_large' | 'io';

export interface Failure {
  readonly ok: false;
  readonly kind: FailureKind;
  readonly detail: string;
  /** The errno code when the failure came from a system call (EMFILE, EINVAL, ...). */
  readonly code?: string;
}

export type Read<T> = { readonly ok: true; readonly value: T } | Failure;

export function ok<T>(value: T): Read<T> {
  return { ok: true, value };
}

export function failed(kind: FailureKind, detail: string): Failure {
  return { ok: false, kind, detail };
}

export function classify(err: unknown): FailureKind {
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  if (code === 'ENOENT' || code === 'ESRCH' || code === 'ENOTDIR') return 'gone';
  if (code === 'EACCES' || code === 'EPERM') return 'denied';
  return 'io';
}
