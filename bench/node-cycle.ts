/**
 * Node agent cycle benchmark on a heavy synthetic node (8 HCAs × 2 ports,
 * 64 jobs, 600 job processes × 256 fds, 200 other processes). Prints figures
 * and ratios against baselines measured in the same run:
 *   cold cycle   (median of fresh collectors) vs `find <procfs>/*\/fd -lname '*uverbs*'`
 *   steady cycle (median of a warm collector)  vs listing every /proc/<pid>/fd
 * Goals: cold ≤ 1.0× find, steady ≤ 1.5× the listing floor, RSS ≤ 120 MB.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { NodeCollector } from '../src/node/collector.js';
import { HEAVY_NODE, heavyTree } from '../src/demo/scenarios.js';
import { writeTree } from '../src/demo/nodetree.js';

const COLD_RUNS = 7;
const STEADY_RUNS = 30;

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] as number;
}

function time(fn: () => void): number {
  const t0 = performance.now();
  fn();
  return performance.now() - t0;
}

function listingFloor(procfs: string): void {
  for (const name of fs.readdirSync(procfs)) {
    const c = name.charCodeAt(0);
    if (c < 48 || c > 57) continue;
    try {
      fs.readdirSync(path.join(procfs, name, 'fd'));
    } catch {
      // gone
    }
  }
}

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'slurm-otel-bench-'));
try {
  const t0 = performance.now();
  const spec = heavyTree(HEAVY_NODE);
  const roots = writeTree(dir, spec);
  console.log(`tree: ${HEAVY_NODE.hcas} HCAs × ${HEAVY_NODE.portsPerHca} ports, ${HEAVY_NODE.jobs} jobs, ${HEAVY_NODE.jobProcesses} job processes × ${HEAVY_NODE.fdsPerProcess} fds, ${HEAVY_NODE.otherProcesses} others (written in ${((performance.now() - t0) / 1000).toFixed(1)} s)`);

  const find = median(Array.from({ length: COLD_RUNS }, () => time(() => execFileSync('sh', ['-c', `find ${roots.procfs}/*/fd -lname '*uverbs*' | wc -l`]))));
  const cold = median(Array.from({ length: COLD_RUNS }, () => time(() => new NodeCollector({ roots, fdRescanIntervalMs: 60_000 }).cycle(0))));

  const floor = median(Array.from({ length: STEADY_RUNS }, () => time(() => listingFloor(roots.procfs))));
  const warm = new NodeCollector({ roots, fdRescanIntervalMs: 3_600_000 });
  const first = warm.cycle(0);
  const steady = median(Array.from({ length: STEADY_RUNS }, (_, i) => time(() => warm.cycle(1000 * (i + 1)))));
  const rssMb = process.memoryUsage().rss / 2 ** 20;

  const points = first.families.reduce((n, f) => n + f.points.length, 0);
  console.log(`processes seen: ${first.snapshot.stats.processes}, fd links read cold: ${first.snapshot.stats.fdLinksRead}, points: ${points}`);
  console.log(`cold cycle:   ${cold.toFixed(1)} ms   find -lname: ${find.toFixed(1)} ms   ratio ${(cold / find).toFixed(2)}×  (goal ≤ 1.00×)`);
  console.log(`steady cycle: ${steady.toFixed(1)} ms   fd listing floor: ${floor.toFixed(1)} ms   ratio ${(steady / floor).toFixed(2)}×  (goal ≤ 1.50×)`);
  console.log(`RSS: ${rssMb.toFixed(0)} MB  (goal ≤ 120 MB)`);
} finally {
  fs.rmSync(dir, { recursive: true, force: true });
}
