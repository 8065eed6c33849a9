/**
 * Node agent cycle benchmark on a heavy synthetic node (8 HCAs × 2 ports,
 * 64 jobs, 600 job processes × 256 fds, 200 other processes). Prints figures
 * and ratios against baselines measured in the same run:
 *   cold cycle   (median of fresh collectors) vs `find <procfs>/*\/fd -lname '*uverbs*'`, interleaved
 *   steady cycle (median of a warm collector)  vs listing every /proc/<pid>/fd, interleaved
 *   the same node with rdma.current in every cgroup but the root: cold cycle vs find
 *   --qp-counters observe: steady cycle with a new per-PID QP counter reading each cycle
 *     (a stand-in rdma answering with one counter per job process), vs without
 * `--gpus N`: the same node with N stand-in GPUs, each job process holding one with the 31 fds a
 * CUDA process holds (within its 256); find then also matches `*nvidia*`. The ratios are to be no
 * worse than without.
 * `--job-usage off`: the cycles without each job's CPU and memory use (every job cgroup has the
 * files); the steady cycle with it is to stay within 5 % of without.
 * `--fd-reader fs`: the cycles read fd tables through Node's fs, as the agent's --fd-reader fs does
 * (by default the native reader, where it loads; the first lines say which). The floor is always
 * Node's own listing of every fd directory.
 * Goals: cold ≤ 1.0× find, steady ≤ 1.3× the listing floor (1.5× until 2026-12-05), RSS ≤ 120 MB; with rdma.current
 * everywhere cold ≤ 0.1× find.
 *
 * bench/node-cycle-real.ts runs the same node's cycle on the real kernel (needs root).
 *
 * The synthetic procfs holds plain symlinks, so a device number comes from the tree's table; each
 * such lookup here also makes the real stat system call on the fd's path (whose target may not
 * exist), so the cycles pay what stat costs on a node. The rule (only links that are paths are
 * stat'ed) is weighed against stat of every fd, measured on the same tree.
 */
import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { HOLD_COUNTER_FILES, NodeCollector, type CollectorOptions } from '../src/node/collect.js';
import { silentLogger } from '../test/support/log.js';
import { parseQpCounters } from '../test/support/qp-text.js';
import { QpSource } from '../src/node/qp/qp-source.js';
import type { TreeRoots, TreeSpec } from '../src/demo/nodetree.js';
import type { Roots } from '../src/node/read/roots.js';
import { type QpCounterJson } from '../src/demo/fake-rdma.js';
import { RecordingRdma } from '../test/support/recording-rdma.js';
import { HEAVY_NODE, heavyTree, nodeTreeDir } from './heavy-node.js';
import { writeTree } from '../src/demo/nodetree.js';
import { WRAPS_32 } from '../src/node/read/hca.js';
import {
  alternated,
  asNodeAgent,
  benchFdReader,
  listingFloor,
  median,
  ratioText,
  sayRuntime,
  time,
  type RoundRatios,
} from './stats.js';

/**
 * The per-QP counters of mlx5: the 32-bit Q and error group the agent already knows (less
 * rx_dct_connect, which is per port), the congestion counters and the optional byte counters.
 */
const Q_COUNTERS = [
  ...[...WRAPS_32].filter((c) => c !== 'rx_dct_connect'),
  'rp_cnp_ignored',
  'rp_cnp_handled',
  'np_ecn_marked_roce_packets',
  'np_cnp_sent',
  'rdma_tx_bytes',
  'rdma_rx_bytes',
];

const COLD_RUNS = 7;
const GPUS = process.argv.includes('--gpus') ? Number(process.argv[process.argv.indexOf('--gpus') + 1]) : 0;
/** `--job-usage off`: without each job's CPU and memory use from its cgroup (the agent's --job-usage). */
const JOB_USAGE = !(
  process.argv.includes('--job-usage') && process.argv[process.argv.indexOf('--job-usage') + 1] === 'off'
);
/** What a baseline finds: fds on an HCA (and, with GPUs, on anything NVIDIA's). */
const FIND_NAMES = GPUS > 0 ? `\\( -lname '*uverbs*' -o -lname '*nvidia*' \\)` : `-lname '*uverbs*'`;
const STEADY_RUNS = 30;

/** A collector as the running agent makes one (its counter files held between cycles, its fd reader). */
function agentCollector(opts: Omit<CollectorOptions, 'holdCounterFiles'>): NodeCollector {
  return new NodeCollector({ ...opts, holdCounterFiles: HOLD_COUNTER_FILES, fdReader: FD_READER });
}

/** One cold cycle of a fresh agent collector, which then lets its held files go. */
function coldCycle(opts: Omit<CollectorOptions, 'holdCounterFiles'>): void {
  const c = agentCollector(opts);
  c.cycle(0);
  c.close();
}

/** Medians of `find` over the fd directories and of `cycle`, run alternately, as the steady cycle and its floor are. */
function coldAgainstFind(procfs: string, cycle: () => void): [find: number, cold: number, rounds: RoundRatios] {
  return alternated(
    COLD_RUNS,
    () => time(() => execFileSync('sh', ['-c', `find ${procfs}/*/fd ${FIND_NAMES} | wc -l`])),
    () => time(cycle),
  );
}

/** The tree's device numbers, each lookup paying a real stat of the fd's path. */
function statCosting(tree: TreeRoots): Roots {
  return {
    ...tree,
    fdDevice: (fdPath, link) => {
      fs.statSync(fdPath, { throwIfNoEntry: false });
      return tree.fdDevice(fdPath, link);
    },
  };
}

/** stat of every fd of every process: what identifying by device number would cost without the rule. */
function statEveryFd(procfs: string): number {
  let n = 0;
  for (const name of fs.readdirSync(procfs)) {
    const c = name.charCodeAt(0);
    if (c < 48 || c > 57) continue;
    const fdDir = `${procfs}/${name}/fd/`;
    for (const fd of fs.readdirSync(fdDir)) {
      fs.statSync(fdDir + fd, { throwIfNoEntry: false });
      n++;
    }
  }
  return n;
}

asNodeAgent();
sayRuntime();
const FD_READER = benchFdReader();
const dir = nodeTreeDir('slurm-otel-bench-');
try {
  const t0 = performance.now();
  const spec = heavyTree({ ...HEAVY_NODE, gpus: GPUS });
  const roots = statCosting(writeTree(dir, spec));
  console.log(
    `tree: ${HEAVY_NODE.hcas} HCAs × ${HEAVY_NODE.portsPerHca} ports, ${GPUS} GPUs, job usage ${JOB_USAGE ? 'on' : 'off'}, ${HEAVY_NODE.jobs} jobs, ${HEAVY_NODE.jobProcesses} job processes × ${HEAVY_NODE.fdsPerProcess} fds, ${HEAVY_NODE.otherProcesses} others (written in ${((performance.now() - t0) / 1000).toFixed(1)} s)`,
  );

  const [find, cold, coldRounds] = coldAgainstFind(roots.procfs, () =>
    coldCycle({ roots, fdRescanIntervalMs: 60_000, jobUsage: JOB_USAGE }),
  );

  const warm = agentCollector({ roots, fdRescanIntervalMs: 3_600_000, jobUsage: JOB_USAGE });
  const first = warm.cycle(0);
  const [floor, steady, steadyRounds] = alternated(
    STEADY_RUNS,
    () => time(() => listingFloor(roots.procfs)),
    (i) => time(() => warm.cycle(1000 * (i + 1))),
  );
  warm.close();
  const rssMb = process.memoryUsage().rss / 2 ** 20;

  const points = first.families.reduce((n, f) => n + f.points.length, 0);
  let fds = 0;
  const statAll = median(Array.from({ length: COLD_RUNS }, () => time(() => (fds = statEveryFd(roots.procfs)))));
  console.log(
    `processes seen: ${first.snapshot.stats.processes}, fd links read cold: ${first.snapshot.stats.fdLinksRead}, points: ${points}`,
  );
  console.log(
    `device numbers: ${first.snapshot.stats.fdsStated} fds stat'ed cold (links that are paths); stat of all ${fds} fds alone: ${statAll.toFixed(1)} ms`,
  );
  console.log(
    `cold cycle:   ${cold.toFixed(1)} ms   find -lname: ${find.toFixed(1)} ms   ${ratioText(cold, find, coldRounds)}  (goal ≤ 1.00×)`,
  );
  console.log(
    `steady cycle: ${steady.toFixed(1)} ms   fd listing floor: ${floor.toFixed(1)} ms   ${ratioText(steady, floor, steadyRounds)}  (goal ≤ 1.30×)`,
  );
  console.log(`RSS: ${rssMb.toFixed(0)} MB  (goal ≤ 120 MB)`);

  await rdmaEverywhere(spec);
  await qpObserve(spec, roots, steady);
} finally {
  fs.rmSync(dir, { recursive: true, force: true });
}

/** The same node with the rdma controller enabled everywhere: only root-cgroup processes need their fds read. */
async function rdmaEverywhere(spec: TreeSpec): Promise<void> {
  const rdmaDir = fs.mkdtempSync(path.join(os.tmpdir(), 'slurm-otel-bench-rdma-'));
  try {
    const roots = statCosting(writeTree(rdmaDir, { ...spec, rdmaEverywhere: true }));
    const [find, cold] = coldAgainstFind(roots.procfs, () => coldCycle({ roots, fdRescanIntervalMs: 60_000 }));
    const warm = agentCollector({ roots, fdRescanIntervalMs: 3_600_000 });
    const first = warm.cycle(0);
    const steady = median(Array.from({ length: STEADY_RUNS }, (_, i) => time(() => warm.cycle(1000 * (i + 1)))));
    warm.close();
    const { processes, coveredByRdmaCgroup, fdLinksRead } = first.snapshot.stats;
    console.log(
      `rdma.current everywhere: ${coveredByRdmaCgroup} of ${processes} processes covered, fd links read cold: ${fdLinksRead}`,
    );
    console.log(
      `  cold cycle: ${cold.toFixed(1)} ms   find -lname: ${find.toFixed(1)} ms   ratio ${(cold / find).toFixed(2)}×  (goal ≤ 0.10×)   steady: ${steady.toFixed(1)} ms`,
    );
  } finally {
    fs.rmSync(rdmaDir, { recursive: true, force: true });
  }
}

/** One per-PID counter for every job process, on its job's HCA, with the Q counters and optional bytes. */
function qpCounters(spec: TreeSpec, round: number): QpCounterJson[] {
  const out: QpCounterJson[] = [];
  for (const job of spec.jobs) {
    for (const t of job.steps.flatMap((s) => s.tasks)) {
      const hca = spec.hcas.find((h) => h.uverbs === t.uverbs?.[0]);
      if (!hca) continue;
      const v = (t.pid % 97) * round;
      const counters = Object.fromEntries(Q_COUNTERS.map((name, i) => [name, v * (i + 1)]));
      out.push({
        ifname: hca.name,
        port: 1,
        cntn: t.pid % 1000,
        pid: t.pid,
        comm: t.comm,
        counters,
        lqpn: [t.pid * 4, t.pid * 4 + 1, t.pid * 4 + 2, t.pid * 4 + 3],
      });
    }
  }
  return out;
}

/**
 * --qp-counters observe: each measured cycle folds in a new reading; the rdma runs themselves are
 * in the background.
 */
async function qpObserve(spec: TreeSpec, roots: Roots, without: number): Promise<void> {
  const rdmaDir = fs.mkdtempSync(path.join(os.tmpdir(), 'slurm-otel-bench-fake-rdma-'));
  const rdma = new RecordingRdma(rdmaDir);
  const source = new QpSource({ path: rdma.path, mode: 'observe', timeoutMs: 10_000, logger: silentLogger() });
  try {
    const counters = qpCounters(spec, 1);
    rdma.counters(counters);
    rdma.resources(
      counters.flatMap((c) => c.lqpn.map((lqpn) => ({ ifname: c.ifname, port: c.port, pid: c.pid as number, lqpn }))),
    );
    const text = fs.readFileSync(path.join(rdmaDir, 'stat.json'), 'utf8');
    const parse = median(Array.from({ length: STEADY_RUNS }, () => time(() => parseQpCounters(text))));
    const warm = agentCollector({ roots, fdRescanIntervalMs: 3_600_000, qp: source });
    const times: number[] = [];
    let seq: number | undefined;
    let runMs = 0;
    for (let i = 0; i < STEADY_RUNS + 1; i++) {
      rdma.counters(qpCounters(spec, i + 1));
      const t0 = performance.now();
      for (;;) {
        const t = performance.now();
        const c = warm.cycle(1000 * (i + 1));
        if (source.latest()?.seq !== seq) {
          if (i > 0) times.push(performance.now() - t);
          seq = source.latest()?.seq;
          runMs = Math.max(runMs, performance.now() - t0);
          if (i === STEADY_RUNS)
            console.log(
              `--qp-counters observe: ${counters.length} per-PID counters (${(text.length / 1024).toFixed(0)} KiB of JSON), points: ${c.families.reduce((n, f) => n + f.points.length, 0)}`,
            );
          break;
        }
        await new Promise((r) => setTimeout(r, 5));
      }
    }
    const shows = rdma.calls().filter((l) => l === '-j statistic qp show').length;
    const cycle = median(times);
    // What a reading costs the agent's event loop outside the cycle: starting the two rdma runs, and parsing.
    const spawnMs = median(
      Array.from({ length: 9 }, () =>
        time(() => spawn(rdma.path, ['-j', 'statistic', 'qp', 'show'], { detached: true, stdio: 'ignore' }).unref()),
      ),
    );
    console.log(
      `  steady cycle: ${cycle.toFixed(1)} ms with, ${without.toFixed(1)} ms without (${(cycle / without).toFixed(2)}×); statistic qp show runs: ${shows} for ${STEADY_RUNS + 1} readings`,
    );
    console.log(
      `  background, per reading: 2 × ${spawnMs.toFixed(1)} ms to start rdma, ${parse.toFixed(1)} ms to parse the counters`,
    );
  } finally {
    source.stop();
    fs.rmSync(rdmaDir, { recursive: true, force: true });
  }
}
