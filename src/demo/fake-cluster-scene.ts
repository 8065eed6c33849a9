/**
 * The demo's opening scene on a fake cluster: the scripted jobs and the drained node it starts
 * with (FakeCluster's `workload: 'demo'`), played through the few operations the cluster lends it.
 */
import type { FakeJob, FakeNode, FakeUser } from './fake-cluster-types.js';
import { USERS, usableMemory, type JobRequest, type Partition } from './fake-cluster-build.js';

/** What the scene may do to the cluster it sets up. */
export interface SceneTarget {
  readonly parts: readonly Partition[];
  readonly nodes: readonly FakeNode[];
  submit(req: JobRequest, t: number): FakeJob;
  /** Submits at `submit` and starts at `start` where the job fits. */
  startSeeded(req: JobRequest, submit: number, start: number): void;
  /** Drains the node at `index` (if it is empty) at `at`. */
  drainSeeded(index: number, at: number): void;
  findNodes(job: FakeJob): readonly number[] | undefined;
  startJob(job: FakeJob, idx: readonly number[], t: number): FakeJob;
  job(id: number): FakeJob | undefined;
  /** A job that ran and ended before the start. */
  addFinished(req: JobRequest, submit: number, end: number): void;
}

/**
 * The demo's opening scene: a 2-node GPU job, an 8-task array with 4 running and `4-7%4`
 * pending, an unlimited notebook, a whole-partition GPU job waiting for Resources and one behind
 * it for Priority, three recently finished jobs, and one drained GPU node.
 */
export function seedDemoWorkload(c: SceneTarget, t0: number): void {
  const gpu = c.parts.find((p) => p.gpusPerNode > 0);
  const cpu = c.parts.find((p) => p.gpusPerNode === 0) ?? gpu;
  const alice = USERS[0] as FakeUser;
  const bob = USERS[1] as FakeUser;
  const ok = { outcome: 'COMPLETED', exitStatus: 0 } as const;
  if (gpu !== undefined) {
    const node = c.nodes[gpu.nodeIdx[0] as number] as FakeNode;
    const half = Math.max(1, Math.floor(node.gpus / 2));
    const share = half / node.gpus;
    const memory = (fraction: number) => Math.floor((usableMemory(node) * fraction) / 1024) * 1024;
    const nodeCount = Math.min(2, gpu.nodeIdx.length);
    const shape = { gpusPerNode: half, cpusPerNode: Math.floor(node.cpus * share), memPerNodeMiB: memory(share) };
    c.startSeeded(
      {
        ...shape,
        ...ok,
        name: 'llm-train',
        user: alice,
        partition: gpu.name,
        nodeCount,
        timeLimitMin: 1440,
        runSeconds: 20 * 3600,
      },
      t0 - 7300,
      t0 - 7200,
    );
    if (gpu.nodeIdx.length >= 4) c.drainSeeded(gpu.nodeIdx[gpu.nodeIdx.length - 1] as number, t0 - 3600);
    const all = {
      nodeCount: gpu.nodeIdx.length,
      gpusPerNode: node.gpus,
      cpusPerNode: node.cpus,
      memPerNodeMiB: memory(1),
      timeLimitMin: 720,
      runSeconds: 4 * 3600,
      ...ok,
    };
    c.submit({ ...all, name: 'big-sim', user: bob, partition: gpu.name }, t0 - 120);
    c.submit(
      { ...all, nodeCount: Math.min(2, gpu.nodeIdx.length), name: 'finetune', user: alice, partition: gpu.name },
      t0 - 60,
    );
  }
  if (cpu !== undefined) seedCpuJobs(c, cpu, t0, bob, alice);
}

function seedCpuJobs(c: SceneTarget, cpu: Partition, t0: number, bob: FakeUser, alice: FakeUser): void {
  const small = { partition: cpu.name, nodeCount: 1, gpusPerNode: 0, exitStatus: 0 } as const;
  const sweep = c.submit(
    {
      ...small,
      name: 'sweep',
      user: bob,
      cpusPerNode: 8,
      memPerNodeMiB: 16_384,
      timeLimitMin: 60,
      runSeconds: 25 * 60,
      outcome: 'COMPLETED',
      tasks: { count: 8, maxRunning: 4 },
    },
    t0 - 600,
  );
  let master = sweep;
  for (let k = 0; k < 4; k++) {
    const idx = c.findNodes(master);
    if (idx === undefined) break;
    c.startJob(master, idx, t0 - 580 + k * 5);
    master = c.job(sweep.id) as FakeJob;
  }
  const notebook = {
    ...small,
    name: 'notebook',
    user: alice,
    cpusPerNode: 16,
    memPerNodeMiB: 65_536,
    timeLimitMin: 'UNLIMITED',
    runSeconds: Infinity,
    outcome: 'CANCELLED',
  } as const;
  c.startSeeded(notebook, t0 - 2 * 86_400, t0 - 2 * 86_400 + 10);
  const done = { ...small, cpusPerNode: 4, memPerNodeMiB: 8192, timeLimitMin: 60, runSeconds: 600 } as const;
  c.addFinished({ ...done, name: 'eval', user: alice, outcome: 'COMPLETED', exitStatus: 0 }, t0 - 700, t0 - 60);
  c.addFinished({ ...done, name: 'preprocess', user: bob, outcome: 'FAILED', exitStatus: 3 }, t0 - 900, t0 - 100);
  c.addFinished({ ...done, name: 'stuck', user: bob, outcome: 'CANCELLED', exitStatus: 0 }, t0 - 3000, t0 - 200);
}
