/**
 * Endpoints the negotiated API version does not serve. A slurmrestd without slurmdbd has no
 * `/slurmdb/` paths, one older than Slurm 23.11 no `/shares`; either answers 404 while the rest of
 * its version works. Renegotiating would not bring them back, so such a 404 is remembered: the
 * endpoint is asked again once per retry period (or after a renegotiation), not every cycle.
 *
 * A slurmrestd whose discovery document lists no `/slurmdb/` version at all is remembered the same
 * way, under `/slurmdb/`, and asked again by renegotiating.
 *
 * A 404 is taken for a missing endpoint when the negotiation already served another path and not
 * this one; a 404 on a path it served before, or before anything was served, still means the
 * version itself may be gone (slurmrestd restarted with other plugins): renegotiate first.
 */

/** How long a missing endpoint is left alone before it is asked again. */
export const ABSENT_RETRY_MS = 10 * 60_000;

/** What one negotiation has learnt about its paths. */
class NegotiationPaths {
  readonly served = new Set<string>();
  /** Path → when to ask it again (ms since epoch). */
  readonly absent = new Map<string, number>();
}

export class EndpointMemory {
  /** Per negotiation: a new one (another version, or slurmrestd restarted) starts afresh. */
  private readonly perNegotiation = new WeakMap<object, NegotiationPaths>();
  /** Missing paths already reported, across negotiations, until they are served again. */
  private readonly reported = new Set<string>();

  constructor(
    private readonly retryMs: number,
    private readonly now: () => number,
  ) {}

  /** True while the path is remembered missing on this negotiation and its retry time has not come. */
  isAbsent(negotiation: object, path: string): boolean {
    const retryAt = this.of(negotiation).absent.get(path);
    return retryAt !== undefined && this.now() < retryAt;
  }

  /** Remembered missing, and its retry time has come. */
  retryDue(negotiation: object, path: string): boolean {
    const retryAt = this.of(negotiation).absent.get(path);
    return retryAt !== undefined && this.now() >= retryAt;
  }

  /**
   * The path answered; returns true when it had been reported missing (it has appeared). Its
   * whole API (`/slurmdb/`, remembered when slurmrestd listed no version of it) is there too.
   */
  served(negotiation: object, path: string): boolean {
    const paths = this.of(negotiation);
    paths.served.add(path);
    paths.absent.delete(path);
    const api = `/${path.split('/')[1] ?? ''}/`;
    const apiBack = this.reported.delete(api);
    return this.reported.delete(path) || apiBack;
  }

  /** After a 404: does it call the version itself into question (see the header)? */
  worthRenegotiating(negotiation: object, path: string): boolean {
    const { served } = this.of(negotiation);
    return served.size === 0 || served.has(path);
  }

  /** Remembers the path missing; `new` the first time it is reported, `known` after. */
  markAbsent(negotiation: object, path: string): { absence: 'new' | 'known'; retryAtMs: number } {
    const retryAtMs = this.now() + this.retryMs;
    this.of(negotiation).absent.set(path, retryAtMs);
    const absence = this.reported.has(path) ? 'known' : 'new';
    this.reported.add(path);
    return { absence, retryAtMs };
  }

  private of(negotiation: object): NegotiationPaths {
    let paths = this.perNegotiation.get(negotiation);
    if (paths === undefined) this.perNegotiation.set(negotiation, (paths = new NegotiationPaths()));
    return paths;
  }
}
