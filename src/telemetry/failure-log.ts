/**
 * One log line per failure, rate-limited: the first failure is logged at once, then at most one
 * line per interval, carrying how many failures were not logged since; the first success after
 * failures says so once. No stack traces: a failing endpoint is an operational fact, not a bug.
 */
import type { Logger } from '../log.js';

export class RateLimitedFailures {
  private lastLoggedMs: number | undefined;
  private suppressed = 0;
  private failures = 0;

  constructor(
    private readonly logger: Logger,
    private readonly msg: string,
    private readonly intervalMs: number = 60_000,
    private readonly now: () => number = Date.now,
  ) {}

  failed(fields: Readonly<Record<string, unknown>>): void {
    this.failures++;
    const t = this.now();
    if (this.lastLoggedMs !== undefined && t - this.lastLoggedMs < this.intervalMs) {
      this.suppressed++;
      return;
    }
    const note = this.suppressed > 0 ? { suppressed: this.suppressed } : {};
    this.logger.warn({ ...fields, ...note }, this.msg);
    this.lastLoggedMs = t;
    this.suppressed = 0;
  }

  succeeded(fields: Readonly<Record<string, unknown>>): void {
    if (this.failures === 0) return;
    this.logger.info({ ...fields, failures: this.failures }, `${this.msg}: succeeded again`);
    this.failures = 0;
    this.suppressed = 0;
    this.lastLoggedMs = undefined;
  }
}
