/** The node benchmark's heavy synthetic node: many jobs and processes on 8 HCAs (and, as asked, 8 GPUs). */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { port } from '../src/demo/scenarios.js';
import {
  nvidiaDevices,
  standInGpus,
  stepd,
  type LinkSpec,
  type HcaSpec,
  type JobSpec,
  type ProcSpec,
  type TreeLayout,
  type TreeSpec,
} from '../src/demo/nodetree.js';
import { freshInodes } from '../src/node/read/roots.js';

/**
 * A new temporary directory for a synthetic node, on tmpfs (/dev/shm) where there is one. The agent
 * tells a steady process by its /proc/<pid> inode only where inodes are numbered as procfs numbers
 * them; tmpfs numbers them so, a disk filesystem does not (and there the agent reads every
 * process's stat each cycle): on tmpfs the cycles do the work they do on a node.
 */
export function nodeTreeDir(prefix: string): string {
  const memory = '/dev/shm';
  if (freshInodes(memory)) return fs.mkdtempSync(path.join(memory, prefix));
  console.log(
    `(${memory} is not a tmpfs here: the tree goes on ${os.tmpdir()}, where each steady cycle reads every stat)`,
  );
  return fs.mkdtempSync(path.join(os.tmpdir(), prefix));
}

export interface HeavyOptions {
  readonly layout: TreeLayout;
  readonly hcas: number;
  readonly portsPerHca: number;
  readonly jobs: number;
  readonly jobProcesses: number;
  readonly fdsPerProcess: number;
  readonly otherProcesses: number;
  /** Stand-in GPUs; each job process then holds one as a CUDA process does (CUDA_FDS), within its fds. */
  readonly gpus?: number;
}

/**
 * The fds a CUDA process holds, as recorded on a real H200 (23 on its GPU, 2 on nvidiactl, 4 on
 * nvidia-uvm, the two node-wide MIG capabilities): 31 fds, 30 of them naming no GPU or this one.
 */
function cudaLinks(devices: ReadonlyMap<string, string>, gpuMinor: number): LinkSpec[] {
  const link = (target: string): LinkSpec => ({ target, dev: devices.get(target) as string });
  const times = (n: number, target: string): LinkSpec[] => Array.from({ length: n }, () => link(target));
  return [
    ...times(23, `/dev/nvidia${gpuMinor}`),
    ...times(2, '/dev/nvidiactl'),
    ...times(4, '/dev/nvidia-uvm'),
    link('/dev/nvidia-caps/nvidia-cap1'),
    link('/dev/nvidia-caps/nvidia-cap2'),
  ];
}

export const HEAVY_NODE: HeavyOptions = {
  layout: 'v2',
  hcas: 8,
  portsPerHca: 2,
  jobs: 64,
  jobProcesses: 600,
  fdsPerProcess: 256,
  otherProcesses: 200,
};

/** The benchmark node: many jobs and processes, every job process holding one HCA. */
export function heavyTree(o: HeavyOptions): TreeSpec {
  const hcas: HcaSpec[] = Array.from({ length: o.hcas }, (_, i) => ({
    name: `mlx5_${i}`,
    uverbs: (i * 5 + 3) % o.hcas,
    ports: Array.from({ length: o.portsPerHca }, () => port('InfiniBand', '400 Gb/sec (4X NDR)')),
  }));
  const nvidia = o.gpus ? { gpus: standInGpus(o.gpus) } : undefined;
  const devices = nvidia ? nvidiaDevices(nvidia) : new Map<string, string>();
  const perJob = Math.ceil(o.jobProcesses / o.jobs);
  const jobs: JobSpec[] = Array.from({ length: o.jobs }, (_, j) => {
    const jobId = String(1_000_000 + j);
    const count = Math.max(0, Math.min(perJob, o.jobProcesses - j * perJob));
    const tasks: ProcSpec[] = Array.from({ length: count }, (_, t) => ({
      pid: 100_000 + j * 100 + t + 1,
      comm: 'trainer',
      uverbs: [j % o.hcas],
      ...(o.gpus ? { links: cudaLinks(devices, j % o.gpus) } : {}),
      fds: o.fdsPerProcess,
    }));
    return {
      jobId,
      uid: 1000 + j,
      steps: [{ name: 'step_0', tasks, stepd: stepd(100_000 + j * 100, jobId, 'step_0') }],
      // What every job cgroup on a node has: the files the agent reads for the job's CPU and memory use.
      // (cpus: the cpuset Slurm gives it with ConstrainCores=yes, two CPUs per job.)
      usage: {
        cpuUserSeconds: 3600 + j,
        cpuSystemSeconds: 60,
        memoryBytes: 2 ** 33,
        memoryPeakBytes: 2 ** 34,
        cpus: `${2 * j}-${2 * j + 1}`,
      },
    };
  });
  const others: ProcSpec[] = Array.from({ length: o.otherProcesses }, (_, i) => ({
    pid: 10 + i,
    comm: `daemon${i}`,
    fds: 16,
  }));
  return { layout: o.layout, hcas, jobs, others, ...(nvidia ? { nvidia } : {}) };
}
