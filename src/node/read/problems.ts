/** What went wrong while reading one cycle, by source and kind, with one example each. */
import type { FailureKind } from './result.js';

export type Source = 'cgroup' | 'proc' | 'sysfs' | 'jobid';

export interface Problem {
  readonly source: Source;
  readonly kind: FailureKind;
  count: number;
  readonly example: string;
}

export class Problems {
  private readonly byKey = new Map<string, Problem>();

  add(source: Source, kind: FailureKind, detail: string): void {
    const key = `${source}/${kind}`;
    const p = this.byKey.get(key);
    if (p) p.count++;
    else this.byKey.set(key, { source, kind, count: 1, example: detail });
  }

  /** How many problems were added so far (every occurrence). */
  total(): number {
    let n = 0;
    for (const p of this.byKey.values()) n += p.count;
    return n;
  }

  list(): Problem[] {
    return [...this.byKey.values()];
  }
}
