/** `explain --job N`: one job's cgroups, processes, devices with why, usage and Slurm's GPUs. */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { jobView, notOnNodeMessage, renderJobView } from '../../src/cli/explain-job.js';
import { NodeCollector } from '../../src/node/collect.js';
import type { GpuAllocationSource, GpuAllocationTable } from '../../src/node/read/gres-source.js';
import { DEMO_GPU_ALLOCATION, demoTree } from '../../src/demo/scenarios.js';
import { nvidiaDevices, writeTree } from '../../src/demo/nodetree.js';
import { tmpDir } from '../support/tmp.js';
import { processAgeSeconds, uptimeSeconds } from '../../src/node/read/process-age.js';
import { canMakeDeviceNodes, explainCli } from '../support/node-tree.js';

const GIB = 2 ** 30;
const MIB = 2 ** 20;

describe.runIf(canMakeDeviceNodes('explain --job on a synthetic node'))('slurm-otel explain --job', () => {
  it('shows one job: its cgroup, processes, the port and GPU it holds with why, and its usage', () => {
    const roots = writeTree(tmpDir(), demoTree({ layout: 'v2', nonJobHolder: true, gpus: true, usage: true }));
    const r = explainCli(roots, '--job', '918002');
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    const lines = r.stdout.trimEnd().split('\n');
    expect(lines[0]).toBe('job 918002');
    expect(lines).toContainEqual(expect.stringMatching(/^cgroup: .*\/job_918002$/));
    expect(lines).toContain('process: 42010 python');
    expect(lines).toContainEqual(expect.stringMatching(/^process: \d+ slurmstepd \(slurmstepd\)$/));
    // mlx5_1 is shared with 918003: the job holds it but gets no per-job series for it, and says why.
    expect(lines).toContainEqual(
      expect.stringMatching(/^port: mlx5_1 1: 42010 python.*, 42011 python.* \[fd\]: shared: 2 jobs hold the device$/),
    );
    expect(lines).toContainEqual(expect.stringMatching(/^gpu: nvidia1 GPU-\S+: held by 42010, 42011: sole: /));
    expect(lines).toContain(
      'usage: cpu user 1250.0 s, system 410.0 s; memory 6.0 GiB, peak 9.0 GiB, limit 32.0 GiB; oom kills 0',
    );
    // Nothing of the other jobs.
    expect(r.stdout).not.toMatch(/918001|918003|918004|mlx5_0|nvidia0/);
  });

  it('--json prints the same view as an object', () => {
    const roots = writeTree(tmpDir(), demoTree({ layout: 'v2', gpus: true, usage: true, nonJobHolder: false }));
    const r = explainCli(roots, '--job', '918001', '--json');
    expect(r.status).toBe(0);
    const out = JSON.parse(r.stdout) as {
      job: string;
      ports: { device: string; status: string }[];
      gpus: { device: string; held: boolean }[];
      usage: { memoryLimitBytes: number };
    };
    expect(out.job).toBe('918001');
    expect(out.ports.map((p) => [p.device, p.status])).toEqual([['mlx5_0', 'sole']]);
    expect(out.gpus.map((g) => [g.device, g.held])).toEqual([['nvidia0', true]]);
    expect(out.usage.memoryLimitBytes).toBe(64 * GIB);
  });

  it('a job not on the node exits 1, naming the job and the jobs that are', () => {
    const roots = writeTree(tmpDir(), demoTree({ layout: 'v2', nonJobHolder: false }));
    const r = explainCli(roots, '--job', '4242');
    expect(r.status).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr).toBe('slurm-otel: job 4242 is not on this node; jobs here: 918001, 918002, 918003, 918004\n');
  });

  it('a job argument that is neither digits nor a SLUID is a usage error', () => {
    const roots = writeTree(tmpDir(), demoTree({ layout: 'v2', nonJobHolder: false }));
    const r = explainCli(roots, '--job', '91800x');
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('neither a job id (digits) nor a SLUID');
  });
});

describe('explain --job view', () => {
  it('finds a job by its SLUID directory and names it by its job id', () => {
    const roots = writeTree(tmpDir(), demoTree({ layout: 'v2-sluid', nonJobHolder: false }));
    const c = new NodeCollector({ roots, fdRescanIntervalMs: 60_000, readAllFds: true }).cycle(1000);
    const byId = jobView(c, '918001', () => undefined);
    expect(byId?.job).toBe('918001');
    expect(byId?.sluid).toBe('sEKNKTV3WPV500');
    expect(jobView(c, 'sEKNKTV3WPV500', () => undefined)?.job).toBe('918001');
  });

  it("lists Slurm's GPUs for the job, and a GPU given but not held with its why", () => {
    const spec = demoTree({ layout: 'v2', gpus: true, nonJobHolder: false });
    const roots = writeTree(tmpDir(), spec);
    const devices = nvidiaDevices(spec.nvidia ?? { gpus: [] });
    const dev = (minor: number): string => devices.get(`/dev/nvidia${minor}`) as string;
    const table: GpuAllocationTable = {
      known: true,
      jobs: new Map(Object.entries(DEMO_GPU_ALLOCATION).map(([job, minors]) => [job, minors.map(dev)])),
      files: [0, 1, 2, 3].map((m) => ({ path: `/dev/nvidia${m}`, device: dev(m) })),
    };
    const gpuAllocation: GpuAllocationSource = {
      current: () => table,
      want: () => {},
      refresh: async () => {},
      stop: () => {},
    };
    const c = new NodeCollector({ roots, fdRescanIntervalMs: 60_000, readAllFds: true, gpuAllocation }).cycle(1000);
    const v = jobView(c, '918004', () => undefined);
    expect(v?.gpuAllocation).toEqual({ known: true, devices: [dev(3)] });
    expect(v?.gpus.map((g) => [g.device, g.held, g.allocated, g.status])).toEqual([['nvidia3', false, true, 'idle']]);
    const lines = renderJobView(v as NonNullable<typeof v>, new Map([[dev(3), '/dev/nvidia3']]));
    expect(lines).toContain('slurm gpus: /dev/nvidia3');
    expect(lines).toContainEqual(
      expect.stringMatching(/^gpu: nvidia3 \S+: not held by the job, given by Slurm: idle: /),
    );
  });

  it('usage against allocation: CPU time over the elapsed time on the cpuset, peak memory of the limit', () => {
    const base = { job: '7', cgroups: [], processes: [], ports: [], gpus: [] };
    const usage = { cpuUserSeconds: 2, cpuSystemSeconds: 0.1, memoryPeakBytes: 201 * MIB, memoryLimitBytes: 400 * MIB };
    const lines = renderJobView({ ...base, usage: { ...usage, cpusAllocated: 4 }, elapsedSeconds: 12 });
    expect(lines).toContain('cpu: 2.1 s over 12.0 s on 4 CPUs = 4.4 %');
    expect(lines).toContain('memory: peak 201.0 MiB of 400.0 MiB = 50.3 %');
    // No cpuset of its own (ConstrainCores=no): the CPUs are not guessed from the node.
    const unconstrained = renderJobView({ ...base, usage, elapsedSeconds: 12 });
    expect(unconstrained).toContainEqual(
      expect.stringMatching(/^cpu: 2\.1 s over 12\.0 s; CPUs allocated: unknown \(/),
    );
    // No start time read: no share, only the CPUs; no limit: no share of it.
    const { memoryLimitBytes: _, ...noLimit } = usage;
    const bare = renderJobView({ ...base, usage: { ...noLimit, cpusAllocated: 1 } });
    expect(bare).toContain('cpu: 2.1 s (time since start unknown) on 1 CPU');
    expect(bare).toContain('memory: peak 201.0 MiB, no limit');
  });

  it('elapsed time: the oldest of the job processes, from their start ticks and /proc/uptime', () => {
    const roots = writeTree(tmpDir(), demoTree({ layout: 'v2', nonJobHolder: false }));
    const c = new NodeCollector({ roots, fdRescanIntervalMs: 60_000 }).cycle(1000);
    const pids = jobView(c, '918001', () => undefined)!.processes.map((p) => p.pid);
    expect(pids.length).toBeGreaterThan(1);
    // The demo's processes started at tick 1000 + pid; at 5000 s of uptime the first is the oldest.
    fs.writeFileSync(path.join(roots.procfs, 'uptime'), '5000.00 9000.00\n');
    const up = uptimeSeconds(roots.procfs);
    expect(up).toBe(5000);
    const v = jobView(
      c,
      '918001',
      () => undefined,
      (pid) => processAgeSeconds(roots.procfs, pid, up!),
    );
    expect(v?.elapsedSeconds).toBeCloseTo(5000 - (1000 + Math.min(...pids)) / 100, 6);
    expect(processAgeSeconds(roots.procfs, 999_999, 5000)).toBeUndefined();
    expect(uptimeSeconds(tmpDir())).toBeUndefined();
  });

  it('lists at most 20 job ids when the job is not there', () => {
    const roots = writeTree(tmpDir(), demoTree({ layout: 'v2', nonJobHolder: false }));
    const c = new NodeCollector({ roots, fdRescanIntervalMs: 60_000 }).cycle(1000);
    const many = {
      ...c,
      snapshot: {
        ...c.snapshot,
        allocations: Array.from({ length: 25 }, (_, i) => ({
          ...(c.snapshot.allocations[0] as (typeof c.snapshot.allocations)[number]),
          key: `k${i}`,
          jobId: String(100 + i),
        })),
      },
    };
    expect(notOnNodeMessage(many, '7')).toBe(
      `job 7 is not on this node; jobs here: ${Array.from({ length: 20 }, (_, i) => 100 + i).join(', ')} and 5 more`,
    );
  });
});
