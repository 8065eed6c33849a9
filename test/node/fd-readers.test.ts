import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { NodeCollector } from '../../src/node/collect.js';
import type { Cycle } from '../../src/node/join/cycle.js';
import { demoTree } from '../../src/demo/scenarios.js';
import { writeProcess, writeTree, type TreeLayout } from '../../src/demo/nodetree.js';
import type { Roots } from '../../src/node/read/roots.js';
import { nativeReader, nativeReaderTested } from '../support/fd-reader.js';
import { removeProcess, tmpDir } from '../support/tmp.js';

/** What a cycle concluded, without its timings: verdicts, holders, the unreadable, every series. */
function conclusions(c: Cycle): unknown {
  const families = c.families
    .filter((f) => !/duration|seconds_total/.test(f.spec.name))
    .map((f) => ({
      name: f.spec.name,
      points: JSON.stringify(f.points, (_k, v: unknown) => (typeof v === 'bigint' ? `${v}n` : v)),
    }));
  return {
    verdicts: c.attribution.verdicts,
    holders: [...c.snapshot.holders],
    gpuHolders: [...c.snapshot.gpuHolders],
    unreadable: c.snapshot.unreadable,
    gaps: c.snapshot.gaps,
    families,
  };
}

/** Two collectors on one node, one reading fd tables natively, one through Node's fs. */
function pair(roots: Roots): { native: NodeCollector; fs: NodeCollector } {
  const options = { roots, fdRescanIntervalMs: 60_000 };
  return { native: new NodeCollector({ ...options, fdReader: nativeReader() }), fs: new NodeCollector(options) };
}

/** Both collectors' cycle at `atMs`: they must conclude alike. */
function bothAt(c: { native: NodeCollector; fs: NodeCollector }, atMs: number): Cycle {
  const native = c.native.cycle(atMs);
  expect(conclusions(native)).toEqual(conclusions(c.fs.cycle(atMs)));
  return native;
}

describe.runIf(nativeReaderTested)("the native fd reader and Node's fs conclude alike", () => {
  for (const layout of ['v1', 'v2', 'v2-sluid'] as TreeLayout[]) {
    it(`on the demo node (${layout}), cold, steady, as fds open and close, processes come and go, and at the full rescan`, () => {
      const roots = writeTree(tmpDir(), demoTree({ layout, nonJobHolder: true }));
      const c = pair(roots);
      const cold = bothAt(c, 1000);
      expect(cold.snapshot.holders.size).toBeGreaterThan(0);
      expect(bothAt(c, 2000).snapshot.stats.fdLinksRead).toBe(0);
      const pids = fs.readdirSync(roots.procfs).filter((n) => /^\d+$/.test(n));
      const holder = pids.find((pid) =>
        fs.readdirSync(path.join(roots.procfs, pid, 'fd')).some((fd) => {
          const link = fs.readlinkSync(path.join(roots.procfs, pid, 'fd', fd));
          return link.startsWith('/dev/infiniband/');
        }),
      ) as string;
      // A held device opened under a new number, another process gone, a new one holding uverbs1.
      fs.symlinkSync('/dev/infiniband/uverbs2', path.join(roots.procfs, holder, 'fd', '900'));
      removeProcess(roots.procfs, Number(pids.find((p) => p !== holder)));
      writeProcess(roots.procfs, { pid: 77_777, comm: 'late', uverbs: [1], fds: 40 });
      bothAt(c, 3000);
      bothAt(c, 4000);
      bothAt(c, 70_000);
    });
  }
});
