/**
 * The parts of a slurmrestd response that do not depend on the endpoint: `meta`, `errors[]`,
 * `warnings[]`, and the rules that turn a body plus decoded elements into a `Decoded<T>`.
 *
 * Shared by both decoder families and by the streaming reader, which parses the big array
 * element by element and hands the small top-level members here afterwards.
 */
import type { ApiMessage, Decoded, DecodedError, ItemResult, ResponseMeta, SkippedItem } from '../model.js';
import { field, idString, isRecord, num, path, str } from './read.js';
import { redactTokenLike } from '../../log.js';

/** At most this many skip reasons are kept; the count is always exact. */
export const MAX_SKIP_REASONS = 20;

/**
 * ESLURM_REST_EMPTY_RESULT: slurmdbd answers "Nothing found" in `errors[]` when a query matches
 * no job. That is an empty result, not a failure (recorded on Slurm 22.05, dbv0.0.38).
 */
export const SLURM_ERROR_EMPTY_RESULT = 9003;

export function readMeta(body: unknown): ResponseMeta {
  const meta = field(body, 'meta');
  // v0.0.40+ name the block `slurm`; v0.0.36–v0.0.38 name it `Slurm`.
  const slurm = field(meta, 'slurm') ?? field(meta, 'Slurm');
  const dataParser = str(path(meta, 'plugin', 'data_parser')) ?? str(path(meta, 'plugin', 'type'));
  const release = str(field(slurm, 'release')) ?? releaseFromVersion(field(slurm, 'version'));
  const cluster = str(field(slurm, 'cluster'));
  return {
    ...(dataParser !== undefined && dataParser !== '' ? { data_parser: dataParser } : {}),
    ...(release !== undefined && release !== '' ? { slurm_release: release } : {}),
    ...(cluster !== undefined && cluster !== '' ? { cluster } : {}),
  };
}

/** `{major, minor, micro}` (numbers in 22.05, strings later) → `22.05.8`. */
function releaseFromVersion(v: unknown): string | undefined {
  const major = idString(field(v, 'major'));
  const minor = idString(field(v, 'minor'));
  const micro = idString(field(v, 'micro'));
  if (major === undefined || minor === undefined || micro === undefined) return undefined;
  return `${major}.${minor.padStart(2, '0')}.${micro}`;
}

export function readMessages(v: unknown): ApiMessage[] {
  if (!Array.isArray(v)) return [];
  const out: ApiMessage[] = [];
  for (const e of v) {
    if (typeof e === 'string') {
      out.push({ error: e });
      continue;
    }
    if (!isRecord(e)) continue;
    const msg: ApiMessage = {
      ...optional('error', str(e['error'])),
      ...optional('error_number', num(e['error_number']) ?? num(e['errno'])),
      ...optional('description', str(e['description'])),
      ...optional('source', str(e['source'])),
    };
    out.push(msg);
  }
  return out;
}

function optional<K extends string, V>(key: K, value: V | undefined): { [P in K]?: V } {
  return (value === undefined ? {} : { [key]: value }) as { [P in K]?: V };
}

export function describeMessages(errors: readonly ApiMessage[]): string {
  return errors
    .slice(0, 3)
    .map((e) =>
      [e.error, e.description, e.error_number !== undefined ? `#${e.error_number}` : undefined]
        .filter(Boolean)
        .join(': '),
    )
    .join('; ');
}

export function isBenign(e: ApiMessage): boolean {
  return e.error_number === SLURM_ERROR_EMPTY_RESULT;
}

/**
 * The first 40 characters of a body, with tokens and anything token-like replaced: a server may
 * echo the token it refused. Redacted before cutting, so that no part of a token is left.
 */
function safePrefix(text: string): string {
  const redacted = redactTokenLike(text.slice(0, 600));
  return redacted.length > 40 ? `${redacted.slice(0, 40)}…` : redacted;
}

/** A short description of a non-object body, without echoing a whole HTML page into the logs. */
export function describeBody(body: unknown): string {
  if (body === null) return 'null';
  if (Array.isArray(body)) return 'a JSON array';
  if (typeof body === 'string') return `a string starting ${JSON.stringify(safePrefix(body))}`;
  return `a ${typeof body}`;
}

export function notAnObject(body: unknown, what: string): DecodedError {
  return {
    ok: false,
    kind: 'not_an_object',
    message: `${what}: response is ${describeBody(body)}, not a JSON object`,
    errors: [],
    meta: {},
  };
}

/** Accumulates element results; used for whole bodies and, element by element, for streams. */
export class ItemCollector<T> {
  private readonly items: T[] = [];
  private readonly reasons: SkippedItem[] = [];
  private skippedCount = 0;
  private index = 0;

  /** Records the next element's outcome. */
  add(result: ItemResult<T>): void {
    if (result.ok) {
      this.items.push(result.item);
      this.index++;
    } else {
      this.skip(result.reason);
    }
  }

  /** For elements the caller could not even parse (a streamed element with bad JSON). */
  skip(reason: string): void {
    this.skippedCount++;
    if (this.reasons.length < MAX_SKIP_REASONS) this.reasons.push({ index: this.index, reason });
    this.index++;
  }

  /**
   * Builds the result from the envelope members (`meta`, `errors`, `warnings`). `arrayPresent`
   * says whether the data array existed at all.
   */
  finish(envelope: unknown, arrayPresent: boolean, what: string): Decoded<T> {
    const meta = readMeta(envelope);
    const errors = readMessages(field(envelope, 'errors'));
    const warnings = readMessages(field(envelope, 'warnings'));
    const fatalErrors = errors.filter((e) => !isBenign(e));
    if (this.items.length === 0 && fatalErrors.length > 0) {
      return {
        ok: false,
        kind: 'api_errors',
        message: `${what}: Slurm returned errors: ${describeMessages(fatalErrors)}`,
        errors,
        meta,
      };
    }
    if (!arrayPresent && errors.length === 0) {
      return { ok: false, kind: 'missing_data', message: `${what}: response has no ${what} data`, errors, meta };
    }
    return {
      ok: true,
      items: this.items,
      skipped: this.skippedCount,
      skip_reasons: this.reasons,
      meta,
      errors,
      warnings,
    };
  }
}

/**
 * Decodes a whole (already parsed) list response: `{meta, errors, warnings, <key>: [...]}`.
 * `decodeItem` maps one element; failures are counted, never thrown.
 */
export function decodeList<T>(body: unknown, key: string, decodeItem: (v: unknown) => ItemResult<T>): Decoded<T> {
  if (!isRecord(body)) return notAnObject(body, key);
  const arr = body[key];
  const collector = new ItemCollector<T>();
  if (Array.isArray(arr)) {
    for (const el of arr) collector.add(guarded(decodeItem, el));
  }
  return collector.finish(body, Array.isArray(arr), key);
}

/**
 * Runs an element decoder so that even a decoder bug costs one element, not the response.
 * The decoders are written not to throw; this is the belt to those braces.
 */
export function guarded<T>(decodeItem: (v: unknown) => ItemResult<T>, el: unknown): ItemResult<T> {
  try {
    return decodeItem(el);
  } catch (err) {
    return { ok: false, reason: `decoder failed: ${err instanceof Error ? err.message : String(err)}` };
  }
}
