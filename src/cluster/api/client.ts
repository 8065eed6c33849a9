/**
 * The slurmrestd client of the cluster agent: version negotiation, authentication recovery and
 * decoding, on top of the transport.
 *
 * Every public call resolves to a value, never rejects: a `CallResult` that is either decoded
 * data or a `CallFailure` whose `kind` the collectors count per sub-collector. Recovery is
 * bounded and happens here, once per call:
 * - a rejected token (401, or the 500 with an authentication `errors[]` that Slurm 22.05 sends
 *   for a bad or expired token) → `tokenSource.invalidate()` and one more try; 403 is final;
 * - 404 on the negotiated version → renegotiate once and retry (slurmrestd was restarted
 *   without that plugin; that is not an outage);
 * - network errors, timeouts and 502/503/504 → the transport's retries.
 */
import { performance } from 'node:perf_hooks';
import type { Logger } from '../../log.js';
import type {
  ApiMessage,
  DecodedOk,
  DecodeFailureKind,
  Decoded,
  ResponseMeta,
  SlurmDiag,
  SlurmJob,
  SlurmLicense,
  SlurmNode,
  SlurmPartition,
  SlurmQosLimits,
  SlurmReservation,
  SlurmShare,
  SlurmAssociationLimits,
} from '../model.js';
import { AuthError, type TokenSource } from './auth.js';
import { describeMessages, readMessages } from './envelope.js';
import { decodeListStream } from './stream-decode.js';
import { decodeLicense } from './decode-licenses.js';
import { decodeAssociations, decodeQosList } from './decode-limits.js';
import { decodePartition } from './decode-partitions.js';
import { decodeReservation } from './decode-reservations.js';
import { decodeShares } from './decode-shares.js';
import {
  AbortedError,
  HttpTransport,
  NetworkError,
  newStats,
  readText,
  SlurmHttpError,
  TimeoutError,
  TooLargeError,
  type HttpResponse,
  type RequestStats,
  type TlsOptions,
} from './transport.js';
import {
  compareVersionsDesc,
  decoderFor,
  familyOf,
  parseServedVersions,
  pickVersion,
  SUPPORTED_VERSIONS,
  type ServedVersions,
  type SupportedVersion,
} from './versions.js';

/** Discovery documents, in the order slurmrestd releases added them (newest first). */
export const OPENAPI_PATHS = ['/openapi/v3', '/openapi.json', '/openapi'] as const;
/** Bodies read whole (openapi, diag) must fit in one V8 string (~512 MiB on Node 20). */
const MAX_TEXT_BYTES = 256 * 1024 * 1024;
/**
 * Slurm errnos that mean "the credential was not accepted": SLURM_PROTOCOL_AUTHENTICATION_ERROR
 * (1007, what 22.05 reports for a bad or expired JWT) and the ESLURM_AUTH_* block (6000–6099).
 */
const AUTH_ERRNOS = (n: number): boolean => n === 1007 || (n >= 6000 && n < 6100);
const AUTH_TEXT = /authenticat|credential|\btoken\b|expired|\bjwt\b/i;

export interface SlurmClientOptions {
  /** `http(s)://host:port[/prefix]` or `unix:/path/to/slurmrestd.sock`. */
  readonly server: string;
  readonly tokenSource: TokenSource;
  /** `auto` (default) picks the newest version both sides know; `v0.0.4x` pins one. */
  readonly apiVersion?: 'auto' | string;
  /** Per attempt: connect, headers and the whole body (default 30 s). */
  readonly requestTimeoutMs?: number;
  /** Retries after the first attempt, for network errors, timeouts and 502/503/504 (default 2). */
  readonly retries?: number;
  readonly retryBaseDelayMs?: number;
  /** Cap on one response body, enforced while streaming (default 2 GiB). */
  readonly maxResponseBytes?: number;
  readonly tls?: TlsOptions;
  readonly logger: Logger;
}

/**
 * Why a call failed; `slurm_exporter_collector_errors_total` counts runs by it:
 * - auth: credentials missing, rejected (401, 22.05's auth 500) after one renewal, or forbidden (403);
 * - http: any other HTTP status (502 after retries, 404 after renegotiation, a 500 without errors[]);
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
}

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

export type NegotiationSource = 'openapi' | 'probe' | 'configured';

export interface Negotiated {
  /** For `/slurm/` (slurmctld) endpoints. */
  readonly version: SupportedVersion;
  /** For `/slurmdb/` endpoints; undefined when slurmrestd serves none (no slurmdbd). */
  readonly slurmdbVersion?: SupportedVersion;
  /** What discovery found (empty lists when the version was configured without discovery). */
  readonly served: ServedVersions;
  readonly source: NegotiationSource;
}

export type NegotiationResult =
  | { readonly ok: true; readonly negotiated: Negotiated; readonly timing: CallTiming }
  | { readonly ok: false; readonly failure: CallFailure; readonly timing: CallTiming };

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

/** The data of a successful call, or a SlurmCallError. */
export function orThrow<T>(result: CallResult<T>): DecodedOk<T> {
  if (result.ok) return result.data;
  throw new SlurmCallError(result.failure);
}

type Outcome<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly failure: CallFailure };

interface Endpoint<T> {
  readonly api: 'slurm' | 'slurmdb';
  readonly name: string;
  /** The first API version serving the endpoint; an older one answers empty without a request. */
  readonly since?: SupportedVersion;
  /** Query parameters for the negotiated version (they differ between API families). */
  query?(version: SupportedVersion): Readonly<Record<string, string>>;
  decode(res: HttpResponse, version: SupportedVersion): Promise<Decoded<T>>;
}

const EMPTY_SERVED: ServedVersions = { slurm: [], slurmdb: [] };

export class SlurmClient {
  private readonly transport: HttpTransport;
  private readonly tokens: TokenSource;
  private readonly log: Logger;
  private readonly pinned: string | undefined;
  private readonly closing = new AbortController();
  private negotiated: Negotiated | undefined;
  private negotiating: Promise<Outcome<Negotiated>> | undefined;
  private release: string | undefined;

  /** Throws on invalid options (a bad server string, a non-positive timeout): a configuration error. */
  constructor(opts: SlurmClientOptions) {
    this.tokens = opts.tokenSource;
    this.log = opts.logger;
    this.pinned = opts.apiVersion === undefined || opts.apiVersion === 'auto' ? undefined : opts.apiVersion;
    this.transport = new HttpTransport({
      server: opts.server,
      attempts: (opts.retries ?? 2) + 1,
      ...(opts.requestTimeoutMs !== undefined ? { timeoutMs: opts.requestTimeoutMs } : {}),
      ...(opts.retryBaseDelayMs !== undefined ? { baseDelayMs: opts.retryBaseDelayMs } : {}),
      ...(opts.maxResponseBytes !== undefined ? { maxResponseBytes: opts.maxResponseBytes } : {}),
      ...(opts.tls !== undefined ? { tls: opts.tls } : {}),
      onRetry: (err, attempt, delayMs) =>
        this.log.warn(
          { path: err.path, attempt, delay_ms: Math.round(delayMs), err: err.message },
          'slurmrestd request failed; retrying',
        ),
    });
  }

  /** The version in use, once negotiated. */
  current(): Negotiated | undefined {
    return this.negotiated;
  }

  /** Discovers the served versions and picks one (again, when already negotiated). */
  async negotiate(): Promise<NegotiationResult> {
    const started = startClock();
    const stats = newStats();
    if (this.negotiated !== undefined) this.forget(this.negotiated);
    const out = await this.ensureNegotiated(stats);
    const timing = started.stop(stats);
    return out.ok ? { ok: true, negotiated: out.value, timing } : { ok: false, failure: out.failure, timing };
  }

  nodes(opts: CallOptions<SlurmNode> = {}): Promise<CallResult<SlurmNode>> {
    return this.call(
      {
        api: 'slurm',
        name: 'nodes',
        decode: (res, v) => decodeListStream(res.body, 'nodes', decoderFor(v).decodeNode, opts),
      },
      opts,
    );
  }

  jobs(opts: CallOptions<SlurmJob> = {}): Promise<CallResult<SlurmJob>> {
    return this.call(
      {
        api: 'slurm',
        name: 'jobs',
        decode: (res, v) => decodeListStream(res.body, 'jobs', decoderFor(v).decodeJob, opts),
      },
      opts,
    );
  }

  partitions(opts: CallOptions = {}): Promise<CallResult<SlurmPartition>> {
    return this.call(
      { api: 'slurm', name: 'partitions', decode: (res) => decodeListStream(res.body, 'partitions', decodePartition) },
      opts,
    );
  }

  licenses(opts: CallOptions = {}): Promise<CallResult<SlurmLicense>> {
    return this.call(
      { api: 'slurm', name: 'licenses', decode: (res) => decodeListStream(res.body, 'licenses', decodeLicense) },
      opts,
    );
  }

  reservations(opts: CallOptions = {}): Promise<CallResult<SlurmReservation>> {
    return this.call(
      {
        api: 'slurm',
        name: 'reservations',
        decode: (res) => decodeListStream(res.body, 'reservations', decodeReservation),
      },
      opts,
    );
  }

  /** sshare's rows; an API older than v0.0.40 has no /shares: an empty answer, without a request. */
  shares(opts: CallOptions = {}): Promise<CallResult<SlurmShare>> {
    const decode = async (res: HttpResponse): Promise<Decoded<SlurmShare>> =>
      parseWhole(await readText(res.body, MAX_TEXT_BYTES), 'shares', decodeShares);
    return this.call({ api: 'slurm', name: 'shares', since: 'v0.0.40', decode }, opts);
  }

  /** QoS limits from slurmdbd. */
  qos(opts: CallOptions = {}): Promise<CallResult<SlurmQosLimits>> {
    const decode = async (res: HttpResponse): Promise<Decoded<SlurmQosLimits>> =>
      parseWhole(await readText(res.body, MAX_TEXT_BYTES), 'qos', decodeQosList);
    return this.call({ api: 'slurmdb', name: 'qos', decode }, opts);
  }

  /** Association limits from slurmdbd. */
  associations(opts: CallOptions = {}): Promise<CallResult<SlurmAssociationLimits>> {
    const decode = async (res: HttpResponse): Promise<Decoded<SlurmAssociationLimits>> =>
      parseWhole(await readText(res.body, MAX_TEXT_BYTES), 'associations', decodeAssociations);
    return this.call({ api: 'slurmdb', name: 'associations', decode }, opts);
  }

  diag(opts: CallOptions = {}): Promise<CallResult<SlurmDiag>> {
    return this.call({ api: 'slurm', name: 'diag', decode: (res, v) => decodeDiagBody(res, v) }, opts);
  }

  /** Jobs from slurmdbd that were active in [startTime, endTime]. */
  accountingJobs(q: AccountingQuery, opts: CallOptions<SlurmJob> = {}): Promise<CallResult<SlurmJob>> {
    const query = (v: SupportedVersion) => ({
      ...(q.cluster !== undefined && q.cluster !== '' ? { cluster: q.cluster } : {}),
      // Slurm's parse_time rejects bare integers: `uts<epoch>` is its "Unix timestamp" form.
      start_time: `uts${unixSeconds(q.startTime)}`,
      end_time: `uts${unixSeconds(q.endTime)}`,
      // dbv0.0.38 (22.05) rejects parameters it does not know ("Unknown Query field"); these came with v0.0.40.
      ...(familyOf(v) === 'v004x' ? { skip_steps: 'true', disable_truncate_usage_time: 'true' } : {}),
    });
    const decode = (res: HttpResponse, v: SupportedVersion): Promise<Decoded<SlurmJob>> =>
      decodeListStream(res.body, 'jobs', decoderFor(v).decodeAccountingJob, opts);
    return this.call({ api: 'slurmdb', name: 'jobs', query, decode }, opts);
  }

  /** Aborts calls in flight and closes idle connections. */
  close(): void {
    this.closing.abort();
    this.transport.close();
  }

  // -------------------------------------------------------------------------------------------

  private async call<T>(ep: Endpoint<T>, opts: Pick<CallOptions, 'signal'>): Promise<CallResult<T>> {
    const started = startClock();
    const stats = newStats();
    let out: { outcome: Outcome<DecodedOk<T>>; version?: SupportedVersion };
    try {
      out = await this.fetchWithRecovery(ep, stats, this.signal(opts.signal));
    } catch (err) {
      out = { outcome: { ok: false, failure: toFailure(err, this.tokens) } };
    }
    const timing = started.stop(stats);
    const v = out.version !== undefined ? { version: out.version } : {};
    if (out.outcome.ok) {
      this.noteRelease(out.outcome.value.meta);
      return { ok: true, data: out.outcome.value, version: out.version as SupportedVersion, timing };
    }
    return { ok: false, failure: out.outcome.failure, ...v, timing };
  }

  private async fetchWithRecovery<T>(
    ep: Endpoint<T>,
    stats: RequestStats,
    signal: AbortSignal,
  ): Promise<{ outcome: Outcome<DecodedOk<T>>; version?: SupportedVersion }> {
    let version: SupportedVersion | undefined;
    // Two rounds at most: the second only after a 404 made us renegotiate.
    for (let round = 1; round <= 2; round++) {
      const neg = await this.ensureNegotiated(stats);
      if (!neg.ok) return { outcome: neg };
      version = ep.api === 'slurm' ? neg.value.version : neg.value.slurmdbVersion;
      if (version === undefined)
        return { outcome: failure('version', noSlurmdbMessage(neg.value.served, this.pinned)) };
      if (ep.since !== undefined && compareVersionsDesc(version, ep.since) > 0)
        return { outcome: { ok: true, value: emptyResult<T>() }, version };
      const path = endpointPath(ep.api, version, ep.name);
      const v = version;
      try {
        const decoded = await this.authed(
          path,
          ep.query?.(v),
          (res) => ep.decode(res, v).then((d) => explainDecoded(d, res)),
          stats,
          signal,
        );
        return { outcome: fromDecoded(decoded, path), version };
      } catch (err) {
        if (round === 1 && err instanceof SlurmHttpError && err.status === 404) {
          this.log.warn({ path, api_version: version }, 'slurmrestd no longer serves this API version; renegotiating');
          this.forget(neg.value);
          continue;
        }
        return { outcome: { ok: false, failure: toFailure(err, this.tokens) }, version };
      }
    }
    return {
      outcome: failure('http', `${ep.api}/${ep.name}: still HTTP 404 after renegotiating (API ${version})`, {
        status: 404,
      }),
      ...(version ? { version } : {}),
    };
  }

  /** Runs one request with the current credentials; a rejected token is renewed and tried once more. */
  private async authed<T>(
    path: string,
    query: Readonly<Record<string, string>> | undefined,
    handle: (res: HttpResponse) => Promise<T>,
    stats: RequestStats,
    signal: AbortSignal,
  ): Promise<T> {
    let rejection: unknown;
    for (let round = 1; round <= 2; round++) {
      const headers = await this.tokens.headers();
      try {
        return await this.transport.request(path, { headers, signal, stats, ...(query ? { query } : {}) }, handle);
      } catch (err) {
        if (!isTokenRejection(err)) throw err;
        rejection = err;
        if (round === 1) {
          this.log.warn(
            { path, status: (err as SlurmHttpError).status, auth: this.tokens.describe() },
            'slurmrestd rejected the token; renewing it',
          );
          this.tokens.invalidate();
        }
      }
    }
    throw rejection;
  }

  // ---- negotiation ---------------------------------------------------------------------------

  /**
   * Concurrent sub-collectors share one negotiation. It listens to close() only, not to one
   * caller's signal, so that one aborted caller cannot fail it for the others; the transport's
   * timeouts bound it.
   */
  private ensureNegotiated(stats: RequestStats): Promise<Outcome<Negotiated>> {
    if (this.negotiated !== undefined) return Promise.resolve({ ok: true, value: this.negotiated });
    this.negotiating ??= this.runNegotiation(stats, this.closing.signal).finally(() => {
      this.negotiating = undefined;
    });
    return this.negotiating;
  }

  /** Drops a negotiation result, unless another call already replaced it. */
  private forget(stale: Negotiated): void {
    if (this.negotiated === stale) this.negotiated = undefined;
  }

  private async runNegotiation(stats: RequestStats, signal: AbortSignal): Promise<Outcome<Negotiated>> {
    try {
      const found = await this.discover(stats, signal);
      const pick = pickVersion(found.served.slurm, this.pinned);
      if (!pick.ok) return failure('version', pick.error);
      // Without a discovery document the slurmdb plugins are unknown: assume they match, a 404 will tell.
      const slurmdb = found.source === 'openapi' ? pickSlurmdb(found.served, pick.version, this.pinned) : pick.version;
      const negotiated: Negotiated = {
        version: pick.version,
        ...(slurmdb ? { slurmdbVersion: slurmdb } : {}),
        served: found.served,
        source: found.source,
      };
      this.negotiated = negotiated;
      this.log.info(
        {
          api_version: negotiated.version,
          slurmdb_api_version: slurmdb ?? null,
          served: found.served.slurm,
          source: found.source,
          auth: this.tokens.describe(),
        },
        'slurmrestd API version chosen',
      );
      return { ok: true, value: negotiated };
    } catch (err) {
      return { ok: false, failure: toFailure(err, this.tokens) };
    }
  }

  private async discover(
    stats: RequestStats,
    signal: AbortSignal,
  ): Promise<{ served: ServedVersions; source: NegotiationSource }> {
    for (const path of OPENAPI_PATHS) {
      const served = await this.readOpenapi(path, stats, signal);
      if (served !== undefined) return { served, source: 'openapi' };
    }
    // A pinned version needs no probing: its first request will tell.
    if (this.pinned !== undefined) return { served: EMPTY_SERVED, source: 'configured' };
    return this.probe(stats, signal);
  }

  /** Served versions from one discovery document; undefined when that document is no use. */
  private async readOpenapi(
    path: string,
    stats: RequestStats,
    signal: AbortSignal,
  ): Promise<ServedVersions | undefined> {
    let text: string;
    try {
      text = await this.authed(path, undefined, (res) => readText(res.body, MAX_TEXT_BYTES), stats, signal);
    } catch (err) {
      // Credentials and outages end negotiation; an unknown or broken document means try the next.
      if ((err instanceof SlurmHttpError && !isAuthFailure(err)) || err instanceof TooLargeError) return undefined;
      throw err;
    }
    let doc: unknown;
    try {
      doc = JSON.parse(text);
    } catch {
      return undefined;
    }
    const served = parseServedVersions(doc);
    return served.slurm.length > 0 ? served : undefined;
  }

  /** Last resort: `GET /slurm/vX/diag/` newest first; anything but 404 means the version exists. */
  private async probe(
    stats: RequestStats,
    signal: AbortSignal,
  ): Promise<{ served: ServedVersions; source: NegotiationSource }> {
    for (const v of SUPPORTED_VERSIONS) {
      try {
        const d = await this.authed(
          endpointPath('slurm', v, 'diag'),
          undefined,
          (res) => decodeDiagBody(res, v),
          stats,
          signal,
        );
        if (d.ok) this.noteRelease(d.meta);
      } catch (err) {
        if (err instanceof SlurmHttpError && err.status === 404) continue;
        if (!(err instanceof SlurmHttpError) || isAuthFailure(err)) throw err;
      }
      return { served: { slurm: [v], slurmdb: [v] }, source: 'probe' };
    }
    return { served: EMPTY_SERVED, source: 'probe' };
  }

  private noteRelease(meta: ResponseMeta): void {
    if (meta.slurm_release === undefined || meta.slurm_release === this.release) return;
    this.release = meta.slurm_release;
    this.log.info(
      { slurm_release: meta.slurm_release, data_parser: meta.data_parser, cluster: meta.cluster },
      'slurmrestd reports Slurm release',
    );
  }

  private signal(user: AbortSignal | undefined): AbortSignal {
    return user === undefined ? this.closing.signal : AbortSignal.any([this.closing.signal, user]);
  }
}

// ---- helpers (pure) ---------------------------------------------------------------------------

/** v0.0.36–v0.0.38 paths have no trailing slash (as 22.05 lists them); v0.0.39+ have one. */
export function endpointPath(api: 'slurm' | 'slurmdb', version: SupportedVersion, name: string): string {
  return familyOf(version) === 'v0038' ? `/${api}/${version}/${name}` : `/${api}/${version}/${name}/`;
}

function noSlurmdbMessage(served: ServedVersions, pinned: string | undefined): string {
  if (served.slurmdb.length === 0) return 'slurmrestd serves no /slurmdb/ API version (is slurmdbd configured?)';
  return `no usable /slurmdb/ API version: slurmrestd serves ${served.slurmdb.join(', ')}${pinned !== undefined ? `, ${pinned} was requested` : ''}`;
}

function pickSlurmdb(
  served: ServedVersions,
  slurmVersion: SupportedVersion,
  pinned: string | undefined,
): SupportedVersion | undefined {
  if (served.slurmdb.length === 0) return undefined;
  if (served.slurmdb.includes(slurmVersion)) return slurmVersion;
  const pick = pickVersion(served.slurmdb, pinned);
  return pick.ok ? pick.version : undefined;
}

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

function isAuthFailure(err: SlurmHttpError): boolean {
  return err.status === 403 || isTokenRejection(err);
}

function emptyResult<T>(): DecodedOk<T> {
  return { ok: true, items: [], skipped: 0, skip_reasons: [], meta: {}, errors: [], warnings: [] };
}

function parseWhole<T>(text: string, what: string, decode: (body: unknown) => Decoded<T>): Decoded<T> {
  try {
    return decode(JSON.parse(text) as unknown);
  } catch (err) {
    return {
      ok: false,
      kind: 'malformed_json',
      message: `${what}: response is not valid JSON (${(err as Error).message})`,
      errors: [],
      meta: {},
    };
  }
}

async function decodeDiagBody(res: HttpResponse, version: SupportedVersion): Promise<Decoded<SlurmDiag>> {
  return parseWhole(await readText(res.body, MAX_TEXT_BYTES), 'diag', decoderFor(version).decodeDiag);
}

/** Says what the server sent when a body did not decode (an HTML page from a proxy, typically). */
function explainDecoded<T>(d: Decoded<T>, res: HttpResponse): Decoded<T> {
  if (d.ok || d.kind === 'api_errors' || res.contentType === undefined || /json/i.test(res.contentType)) return d;
  return { ...d, message: `${d.message} (content-type ${res.contentType.split(';')[0]})` };
}

function fromDecoded<T>(d: Decoded<T>, path: string): Outcome<DecodedOk<T>> {
  if (d.ok) return { ok: true, value: d };
  // Counted as auth, not as a Slurm-side error, should a release report a refused token in a 2xx envelope.
  const kind: FailureKind = d.kind !== 'api_errors' ? 'decode' : d.errors.some(isAuthMessage) ? 'auth' : 'api_errors';
  return failure(kind, `GET ${path}: ${d.message}`, { decodeKind: d.kind, errors: d.errors });
}

function failure(
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

function unixSeconds(t: number | Date): number {
  return Math.floor(t instanceof Date ? t.getTime() / 1000 : t);
}

function startClock(): { stop(stats: RequestStats): CallTiming } {
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
