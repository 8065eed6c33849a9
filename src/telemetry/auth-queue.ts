/**
 * The order in which password checks get the one bcrypt worker, so that neither one source nor a
 * flood from many sources can keep a scraper out.
 *
 * Checks run one at a time (the worker has one thread; queuing them here rather than in its
 * message port is what lets the order be chosen). At most `capacity` checks wait or run, and at
 * most `perSource` of them come from one source address: one source cannot hold the queue. Each
 * check comes with its source's standing with the endpoint that asks:
 *
 *   trusted  the source has passed a check before (a scraper seen before);
 *   fresh    no check from it has failed within the failure window;
 *   failed   a check from it has failed within the window.
 *
 * The best standing runs first, the oldest first within one standing. When the queue is full a
 * newcomer takes the place of the newest check of a worse standing, or is told to retry when
 * there is none. A flood from rotating addresses makes every address it uses `failed` from its
 * first wrong guess, so a scraper that has never been seen, as long as its own address has not
 * failed, goes ahead of all of them; a scraper seen before goes ahead of everyone. What no queue
 * can tell apart is a scraper never seen before from an attacker's address never used before:
 * an attacker holding more fresh addresses than the queue has places can still delay the
 * former, never the latter.
 *
 * A check whose client has gone (its connection closed while it waited) is dropped unrun.
 */

export type Standing = 'trusted' | 'fresh' | 'failed';
const RANK: Readonly<Record<Standing, number>> = { trusted: 0, fresh: 1, failed: 2 };

/** Why a check was not run. */
export type NotRun = 'address_queue' | 'queue_full' | 'displaced' | 'gone';

export type Outcome<T> = { readonly ran: true; readonly value: T } | { readonly ran: false; readonly why: NotRun };

export interface Check<T> {
  /** Who asks (an endpoint): close() drops that owner's checks. */
  readonly owner: object;
  readonly source: string;
  readonly standing: Standing;
  readonly run: () => Promise<T>;
  /** True once the client is no longer there to be answered. */
  readonly gone?: () => boolean;
}

interface Waiting<T> {
  readonly check: Check<T>;
  readonly arrival: number;
  readonly settle: (o: Outcome<T>) => void;
}

export class CheckQueue<T> {
  private readonly waiting: Waiting<T>[] = [];
  private running: Waiting<T> | undefined;
  private arrivals = 0;

  constructor(
    private readonly capacity: number,
    private readonly perSource: number,
  ) {}

  submit(check: Check<T>): Promise<Outcome<T>> {
    return new Promise((settle) => {
      const w: Waiting<T> = { check, arrival: this.arrivals++, settle };
      if (this.heldBy(check.owner, check.source) >= this.perSource) return settle({ ran: false, why: 'address_queue' });
      if (this.size() >= this.capacity) {
        const victim = this.displaceable(check.standing);
        if (victim === undefined) return settle({ ran: false, why: 'queue_full' });
        this.remove(victim);
        victim.settle({ ran: false, why: 'displaced' });
      }
      this.waiting.push(w);
      this.pump();
    });
  }

  /** Checks waiting or running. */
  size(): number {
    return this.waiting.length + (this.running ? 1 : 0);
  }

  /** Drops the waiting checks of `owner` (all when undefined), unrun; the running one finishes. */
  drop(owner?: object): void {
    for (const w of [...this.waiting]) {
      if (owner !== undefined && w.check.owner !== owner) continue;
      this.remove(w);
      w.settle({ ran: false, why: 'gone' });
    }
  }

  private heldBy(owner: object, source: string): number {
    const all = this.running ? [...this.waiting, this.running] : this.waiting;
    return all.filter((w) => w.check.owner === owner && w.check.source === source).length;
  }

  /** The newest waiting check of the worst standing, if that is worse than `standing`. */
  private displaceable(standing: Standing): Waiting<T> | undefined {
    let victim: Waiting<T> | undefined;
    for (const w of this.waiting) {
      if (RANK[w.check.standing] <= RANK[standing]) continue;
      const worse = victim === undefined || RANK[w.check.standing] > RANK[victim.check.standing];
      const same = victim !== undefined && RANK[w.check.standing] === RANK[victim.check.standing];
      if (worse || (same && w.arrival > (victim as Waiting<T>).arrival)) victim = w;
    }
    return victim;
  }

  /** The best standing first, the oldest first within one. */
  private next(): Waiting<T> | undefined {
    let best: Waiting<T> | undefined;
    for (const w of this.waiting) {
      const r = RANK[w.check.standing];
      if (
        best === undefined ||
        r < RANK[best.check.standing] ||
        (r === RANK[best.check.standing] && w.arrival < best.arrival)
      )
        best = w;
    }
    return best;
  }

  private remove(w: Waiting<T>): void {
    const i = this.waiting.indexOf(w);
    if (i >= 0) this.waiting.splice(i, 1);
  }

  private pump(): void {
    while (this.running === undefined) {
      const w = this.next();
      if (w === undefined) return;
      this.remove(w);
      if (w.check.gone?.()) {
        w.settle({ ran: false, why: 'gone' });
        continue;
      }
      this.running = w;
      void this.runOne(w);
    }
  }

  private async runOne(w: Waiting<T>): Promise<void> {
    try {
      w.settle({ ran: true, value: await w.check.run() });
    } catch {
      // A check that throws is not let through: its caller reads `gone` as a refusal.
      w.settle({ ran: false, why: 'gone' });
    } finally {
      this.running = undefined;
      this.pump();
    }
  }
}
