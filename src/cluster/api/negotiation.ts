/**
 * Version negotiation with slurmrestd: which API version to speak, found from its discovery
 * documents (newest first), else by probing `/diag/`, else as configured.
 */
import type { Logger } from '../../log.js';
import type { ResponseMeta } from '../model.js';
import type { TokenSource } from './http/auth.js';
import type { CallFailure } from '../http/failure.js';
import { failure, isAuthFailure, toFailure, type Outcome } from './failures.js';
import { decodeDiagBody, MAX_TEXT_BYTES } from './read-whole.js';
import { readText, HttpStatusError, TooLargeError, type HttpResponse, type RequestStats } from '../http/transport.js';
import { endpointPath } from './paths.js';
import {
  parseServedVersions,
  pickVersion,
  SUPPORTED_VERSIONS,
  type ServedVersions,
  type SupportedVersion,
} from './decode/versions.js';
import type { CallTiming } from './call-result.js';

/** Discovery documents, in the order slurmrestd releases added them (newest first). */
export const OPENAPI_PATHS = ['/openapi/v3', '/openapi.json', '/openapi'] as const;

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

/** Runs one request with the current credentials, renewing a rejected token once. */
export type AuthedRequest = <T>(
  path: string,
  query: Readonly<Record<string, string>> | undefined,
  handle: (res: HttpResponse) => Promise<T>,
  stats: RequestStats,
  signal: AbortSignal,
) => Promise<T>;

export interface NegotiatorOptions {
  /** A version the user asked for, or undefined for the newest both sides know. */
  readonly pinned: string | undefined;
  readonly tokens: TokenSource;
  readonly log: Logger;
  readonly authed: AuthedRequest;
  /** Sees the meta of a response read while probing (it names the Slurm release). */
  readonly noteRelease: (meta: ResponseMeta) => void;
  /** Aborted when the client closes. */
  readonly closing: AbortSignal;
}

const EMPTY_SERVED: ServedVersions = { slurm: [], slurmdb: [] };

/** Holds the negotiated versions of one client; negotiates again after forget(). */
export class Negotiator {
  private readonly pinned: string | undefined;
  private readonly tokens: TokenSource;
  private readonly log: Logger;
  private readonly authed: AuthedRequest;
  private readonly noteRelease: (meta: ResponseMeta) => void;
  private readonly closing: AbortSignal;
  private negotiated: Negotiated | undefined;
  private negotiating: Promise<Outcome<Negotiated>> | undefined;

  constructor(opts: NegotiatorOptions) {
    this.pinned = opts.pinned;
    this.tokens = opts.tokens;
    this.log = opts.log;
    this.authed = opts.authed;
    this.noteRelease = opts.noteRelease;
    this.closing = opts.closing;
  }

  /** The versions in use, once negotiated. */
  current(): Negotiated | undefined {
    return this.negotiated;
  }

  /**
   * Concurrent sub-collectors share one negotiation. It listens to close() only, not to one
   * caller's signal, so that one aborted caller cannot fail it for the others; the transport's
   * timeouts bound it.
   */
  ensure(stats: RequestStats): Promise<Outcome<Negotiated>> {
    if (this.negotiated !== undefined) return Promise.resolve({ ok: true, value: this.negotiated });
    this.negotiating ??= this.runNegotiation(stats, this.closing).finally(() => {
      this.negotiating = undefined;
    });
    return this.negotiating;
  }

  /** Drops a negotiation result, unless another call already replaced it. */
  forget(stale: Negotiated): void {
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
      if ((err instanceof HttpStatusError && !isAuthFailure(err)) || err instanceof TooLargeError) return undefined;
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
        if (err instanceof HttpStatusError && err.status === 404) continue;
        if (!(err instanceof HttpStatusError) || isAuthFailure(err)) throw err;
      }
      return { served: { slurm: [v], slurmdb: [v] }, source: 'probe' };
    }
    return { served: EMPTY_SERVED, source: 'probe' };
  }
}

/** Why no /slurmdb/ version can be used, for the failure message. */
export function noSlurmdbMessage(served: ServedVersions, pinned: string | undefined): string {
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
