/**
 * The slurmrestd client of the cluster agent: one method per endpoint, each a call with recovery
 * and decoding, on top of the transport; the version comes from negotiation.ts and failures are
 * classified by failures.ts.
 *
 * Every public call resolves to a value, never rejects: a `CallResult` that is either decoded
 * data or a `CallFailure` whose `kind` the collectors count per sub-collector. Recovery is
 * bounded and happens here, once per call:
 * - a rejected token (401, or the 500 with an authentication `errors[]` that Slurm 22.05 sends
 *   for a bad or expired token) → `tokenSource.invalidate()` and one more try; 403 is final;
 * - 404 on the negotiated version → renegotiate once and retry (slurmrestd was restarted
 *   without that plugin; that is not an outage), unless the version serves other paths and never
 *   served this one: then the endpoint is missing there, remembered as such (absent.ts);
 * - network errors, timeouts and 502/503/504 → the transport's retries.
 */
import type { Logger } from '../../log.js';
import type {
  DecodedOk,
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
import type { TokenSource } from './http/auth.js';
import { startClock, type AccountingQuery, type CallOptions, type CallResult } from './call-result.js';
import type { Absence } from '../http/failure.js';
import { failure, fromDecoded, isTokenRejection, toFailure, type Outcome } from './failures.js';
import { ABSENT_RETRY_MS, EndpointMemory } from './absent.js';
import { noSlurmdbMessage, Negotiator, type Negotiated, type NegotiationResult } from './negotiation.js';
import { endpointPath, ENDPOINTS, servedBy, type EndpointName, type KnownEndpoint } from './paths.js';
import { decodeDiagBody, MAX_TEXT_BYTES, parseWhole } from './read-whole.js';
import { decodeListStream } from './decode/stream-decode.js';
import { decodeLicense } from './decode/decode-licenses.js';
import { decodeAssociations, decodeQosList } from './decode/decode-limits.js';
import { decodePartition } from './decode/decode-partitions.js';
import { decodeReservation } from './decode/decode-reservations.js';
import { decodeShares } from './decode/decode-shares.js';
import {
  HttpTransport,
  newStats,
  readText,
  HttpStatusError,
  type HttpResponse,
  type RequestStats,
  type TlsOptions,
} from '../http/transport.js';
import { decoderFor, familyOf, type SupportedVersion } from './decode/versions.js';

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
  /** How long an endpoint found missing is left alone before it is asked again (default 10 min). */
  readonly absentRetryMs?: number;
  /** The clock of that wait (default Date.now). */
  readonly now?: () => number;
}

/** What one request is: a known endpoint (so that every path is checked against Slurm's specs) and its decoding. */
type Endpoint<T> = KnownEndpoint & {
  /** Query parameters for the negotiated version (they differ between API families). */
  query?(version: SupportedVersion): Readonly<Record<string, string>>;
  decode(res: HttpResponse, version: SupportedVersion): Promise<Decoded<T>>;
};

export class SlurmClient {
  private readonly transport: HttpTransport;
  private readonly tokens: TokenSource;
  private readonly log: Logger;
  private readonly pinned: string | undefined;
  private readonly closing = new AbortController();
  private readonly negotiator: Negotiator;
  private readonly endpoints: EndpointMemory;
  private release: string | undefined;

  /** Throws on invalid options (a bad server string, a non-positive timeout): a configuration error. */
  constructor(opts: SlurmClientOptions) {
    this.tokens = opts.tokenSource;
    this.log = opts.logger;
    this.endpoints = new EndpointMemory(opts.absentRetryMs ?? ABSENT_RETRY_MS, opts.now ?? Date.now);
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
    this.negotiator = new Negotiator({
      pinned: this.pinned,
      tokens: this.tokens,
      log: this.log,
      authed: (path, query, handle, stats, signal) => this.authed(path, query, handle, stats, signal),
      noteRelease: (meta) => this.noteRelease(meta),
      closing: this.closing.signal,
    });
  }

  /** The version in use, once negotiated. */
  current(): Negotiated | undefined {
    return this.negotiator.current();
  }

  /** Discovers the served versions and picks one (again, when already negotiated). */
  async negotiate(): Promise<NegotiationResult> {
    const started = startClock();
    const stats = newStats();
    const stale = this.negotiator.current();
    if (stale !== undefined) this.negotiator.forget(stale);
    const out = await this.negotiator.ensure(stats);
    const timing = started.stop(stats);
    return out.ok ? { ok: true, negotiated: out.value, timing } : { ok: false, failure: out.failure, timing };
  }

  nodes(opts: CallOptions<SlurmNode> = {}): Promise<CallResult<SlurmNode>> {
    return this.call(
      {
        ...ENDPOINTS.nodes,
        decode: (res, v) => decodeListStream(res.body, 'nodes', decoderFor(v).decodeNode, opts),
      },
      opts,
    );
  }

  jobs(opts: CallOptions<SlurmJob> = {}): Promise<CallResult<SlurmJob>> {
    return this.call(
      {
        ...ENDPOINTS.jobs,
        decode: (res, v) => decodeListStream(res.body, 'jobs', decoderFor(v).decodeJob, opts),
      },
      opts,
    );
  }

  partitions(opts: CallOptions = {}): Promise<CallResult<SlurmPartition>> {
    return this.call(
      { ...ENDPOINTS.partitions, decode: (res) => decodeListStream(res.body, 'partitions', decodePartition) },
      opts,
    );
  }

  licenses(opts: CallOptions = {}): Promise<CallResult<SlurmLicense>> {
    return this.call(
      { ...ENDPOINTS.licenses, decode: (res) => decodeListStream(res.body, 'licenses', decodeLicense) },
      opts,
    );
  }

  reservations(opts: CallOptions = {}): Promise<CallResult<SlurmReservation>> {
    return this.call(
      {
        ...ENDPOINTS.reservations,
        decode: (res) => decodeListStream(res.body, 'reservations', decodeReservation),
      },
      opts,
    );
  }

  /** sshare's rows; an API older than v0.0.40 has no /shares: an empty answer, without a request. */
  shares(opts: CallOptions = {}): Promise<CallResult<SlurmShare>> {
    const decode = async (res: HttpResponse): Promise<Decoded<SlurmShare>> =>
      parseWhole(await readText(res.body, MAX_TEXT_BYTES), 'shares', decodeShares);
    return this.call({ ...ENDPOINTS.shares, decode }, opts);
  }

  /** QoS limits from slurmdbd. */
  qos(opts: CallOptions = {}): Promise<CallResult<SlurmQosLimits>> {
    const decode = async (res: HttpResponse): Promise<Decoded<SlurmQosLimits>> =>
      parseWhole(await readText(res.body, MAX_TEXT_BYTES), 'qos', decodeQosList);
    return this.call({ ...ENDPOINTS.qos, decode }, opts);
  }

  /** Association limits from slurmdbd. */
  associations(opts: CallOptions = {}): Promise<CallResult<SlurmAssociationLimits>> {
    const decode = async (res: HttpResponse): Promise<Decoded<SlurmAssociationLimits>> =>
      parseWhole(await readText(res.body, MAX_TEXT_BYTES), 'associations', decodeAssociations);
    return this.call({ ...ENDPOINTS.associations, decode }, opts);
  }

  diag(opts: CallOptions = {}): Promise<CallResult<SlurmDiag>> {
    return this.call({ ...ENDPOINTS.diag, decode: (res, v) => decodeDiagBody(res, v) }, opts);
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
    return this.call({ ...ENDPOINTS.accountingJobs, query, decode }, opts);
  }

  /** Aborts calls in flight (a token renewal included) and closes idle connections. */
  close(): void {
    this.closing.abort();
    this.tokens.close?.();
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
    // Two rounds at most: the second only after a 404 made us renegotiate.
    for (let round = 1; ; round++) {
      const neg = await this.negotiator.ensure(stats);
      if (!neg.ok) return { outcome: neg };
      const version = ep.api === 'slurm' ? neg.value.version : neg.value.slurmdbVersion;
      if (version === undefined && neg.value.served.slurmdb.length === 0) {
        // slurmrestd lists no /slurmdb/ version at all (no slurmdbd): missing like a 404, and only
        // a new discovery document can bring it, so the retry renegotiates.
        if (round === 1 && this.endpoints.retryDue(neg.value, NO_SLURMDB)) {
          this.negotiator.forget(neg.value);
          continue;
        }
        return { outcome: this.noSlurmdb(ep, neg.value) };
      }
      if (version === undefined)
        return { outcome: failure('version', noSlurmdbMessage(neg.value.served, this.pinned)) };
      if (!servedBy(ep, version)) return { outcome: { ok: true, value: emptyResult<T>() }, version };
      const path = endpointPath(ep.api, version, ep.name);
      if (this.endpoints.isAbsent(neg.value, path))
        return { outcome: absentFailure(ep, path, version, 'known'), version };
      try {
        const decoded = await this.authed(
          path,
          ep.query?.(version),
          (res) => ep.decode(res, version).then((d) => explainDecoded(d, res)),
          stats,
          signal,
        );
        if (this.endpoints.served(neg.value, path))
          this.log.info({ path, api_version: version }, 'slurmrestd serves this endpoint again');
        return { outcome: fromDecoded(decoded, path), version };
      } catch (err) {
        if (!(err instanceof HttpStatusError && err.status === 404))
          return { outcome: { ok: false, failure: toFailure(err, this.tokens) }, version };
        if (round === 1 && this.endpoints.worthRenegotiating(neg.value, path)) {
          this.log.warn(
            { path, api_version: version },
            'slurmrestd answered 404; renegotiating in case it no longer serves this API version',
          );
          this.negotiator.forget(neg.value);
          continue;
        }
        return { outcome: this.markAbsent(ep, neg.value, path, version), version };
      }
    }
  }

  /** No /slurmdb/ API at all: every slurmdb endpoint is missing, reported like a 404 (once, then quietly). */
  private noSlurmdb(ep: EndpointName, negotiated: Negotiated): Outcome<never> {
    const known = this.endpoints.isAbsent(negotiated, NO_SLURMDB);
    const absence = known ? 'known' : this.endpoints.markAbsent(negotiated, NO_SLURMDB).absence;
    const message = `${ep.api}/${ep.name}: ${noSlurmdbMessage(negotiated.served, this.pinned)}`;
    if (absence === 'new')
      this.log.warn({ endpoint: `${ep.api}/${ep.name}`, api_version: null }, `${message}; its metrics are absent`);
    return failure('absent', message, { absence });
  }

  /** A 404 that renegotiating would not cure: the endpoint is missing on this version. */
  private markAbsent(
    ep: EndpointName,
    negotiated: Negotiated,
    path: string,
    version: SupportedVersion,
  ): Outcome<never> {
    const { absence, retryAtMs } = this.endpoints.markAbsent(negotiated, path);
    const fields = { endpoint: `${ep.api}/${ep.name}`, path, api_version: version, retry_at: new Date(retryAtMs) };
    if (absence === 'new')
      this.log.warn(
        fields,
        'slurmrestd does not serve this endpoint on the negotiated API version; its metrics are absent',
      );
    else this.log.debug(fields, 'slurmrestd still does not serve this endpoint');
    return absentFailure(ep, path, version, absence);
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
            { path, status: (err as HttpStatusError).status, auth: this.tokens.describe() },
            'slurmrestd rejected the token; renewing it',
          );
          this.tokens.invalidate();
        }
      }
    }
    throw rejection;
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

/** The key under which a slurmrestd without any /slurmdb/ version is remembered. */
const NO_SLURMDB = '/slurmdb/';

function absentFailure(ep: EndpointName, path: string, version: SupportedVersion, absence: Absence): Outcome<never> {
  const message = `${ep.api}/${ep.name}: slurmrestd does not serve ${path} (HTTP 404 on API ${version}; asked again later)`;
  return failure('absent', message, { status: 404, absence });
}

function emptyResult<T>(): DecodedOk<T> {
  return { ok: true, items: [], skipped: 0, skip_reasons: [], meta: {}, errors: [], warnings: [] };
}

/** Says what the server sent when a body did not decode (an HTML page from a proxy, typically). */
function explainDecoded<T>(d: Decoded<T>, res: HttpResponse): Decoded<T> {
  if (d.ok || d.kind === 'api_errors' || res.contentType === undefined || /json/i.test(res.contentType)) return d;
  return { ...d, message: `${d.message} (content-type ${res.contentType.split(';')[0]})` };
}

function unixSeconds(t: number | Date): number {
  return Math.floor(t instanceof Date ? t.getTime() / 1000 : t);
}
