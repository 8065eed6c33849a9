import { describe, expect, it } from 'vitest';
import { NodeCollector } from '../../../src/node/collect.js';
import type { Cycle } from '../../../src/node/join/cycle.js';
import { NODE_METRICS } from '../../../src/node/metrics.js';
import { demoTree } from '../../../src/demo/scenarios.js';
import { nvidiaDevices, standInGpus, writeTree, type ProcSpec, type TreeSpec } from '../../../src/demo/nodetree.js';
import type { GpuAllocationSource, GpuAllocationTable } from '../../../src/node/read/gres-source.js';
import type { Point } from '../../../src/telemetry/spec.js';
import { tmpDir } from '../../support/tmp.js';

const NVIDIA = { gpus: standInGpus(3) };
const DEVICES = nvidiaDevices(NVIDIA);

/** Job 918001 holds nvidia0, job 918002 holds nvidia1; nothing holds nvidia2. */
function tree(): TreeSpec {
  const spec = demoTree({ layout: 'v2', nonJobHolder: false });
  const held: Record<number, string> = { 0: '/dev/nvidia0', 1: '/dev/nvidia1' };
  const jobs = spec.jobs.map((j, i) => {
    const [first, ...rest] = j.steps[0]?.tasks ?? [];
    const target = held[i];
    const task: ProcSpec = { ...(first as ProcSpec), links: target ? [{ target, dev: DEVICES.get(target) }] : [] };
    return { ...j, steps: [{ ...(j.steps[0] as (typeof j.steps)[number]), tasks: [task, ...rest] }] };
  });
  return { ...spec, jobs, nvidia: NVIDIA };
}

const fixed = (table: GpuAllocationTable): GpuAllocationSource => ({
  current: () => table,
  want: () => {},
  refresh: async () => {},
  stop: () => {},
});

function cycle(table?: GpuAllocationTable): Cycle {
  const roots = writeTree(tmpDir(), tree());
  const gpuAllocation = table ? fixed(table) : undefined;
  return new NodeCollector({ roots, fdRescanIntervalMs: 60_000, ...(gpuAllocation ? { gpuAllocation } : {}) }).cycle(
    1000,
  );
}

const status = (c: Cycle) =>
  Object.fromEntries((c.attribution.gpus ?? []).map((v) => [`nvidia${v.unit.gpu.minor}`, v.status]));
const points = (c: Cycle, name: string): Point[] =>
  (c.families.find((f) => f.spec.name === name)?.points ?? []) as Point[];
const rows = (c: Cycle, name: string, keys: string[]) =>
  points(c, name).map((p) => [...keys.map((k) => p.attributes[k]), p.value]);

describe("Slurm's GPU allocation beside the holders", () => {
  it('a job holding a GPU it was not given is unallocated, not attributed; a GPU given and not held says so', () => {
    // 918001 was given nvidia2 (held by nobody) and holds nvidia0; 918002 was given the nvidia1 it holds.
    const c = cycle({
      known: true,
      files: [],
      jobs: new Map([
        ['918001', ['195:2']],
        ['918002', ['195:1']],
      ]),
    });
    expect(status(c)).toEqual({ nvidia0: 'unallocated', nvidia1: 'sole', nvidia2: 'idle' });
    const v0 = c.attribution.gpus?.find((v) => v.unit.gpu.minor === 0);
    expect(v0?.soleJobId).toBeUndefined();
    expect(v0?.why).toMatch(/job 918001 holds it but Slurm did not give it this GPU/);
    expect(rows(c, NODE_METRICS.jobGpuHolder.name, ['job_id', 'device'])).toEqual([
      ['918001', 'nvidia0', 0],
      ['918002', 'nvidia1', 1],
    ]);
    expect(rows(c, NODE_METRICS.jobGpuAllocated.name, ['job_id', 'device', 'held'])).toEqual([
      ['918002', 'nvidia1', 'true', 1],
      ['918001', 'nvidia2', 'false', 1],
    ]);
    const unallocated = points(c, NODE_METRICS.gpuAttribution.name).filter(
      (p) => p.attributes.status === 'unallocated',
    );
    expect(unallocated.map((p) => [p.attributes.device, p.value])).toEqual([
      ['nvidia0', 1],
      ['nvidia1', 0],
      ['nvidia2', 0],
    ]);
  });

  it('a job not in the last squeue reading, or an unknown allocation, leaves the verdict as the holders made it', () => {
    const young = cycle({ known: true, files: [], jobs: new Map([['918002', ['195:1']]]) });
    expect(status(young)).toEqual({ nvidia0: 'sole', nvidia1: 'sole', nvidia2: 'idle' });
    expect(young.attribution.gpus?.[0]?.why).toMatch(/allocation of job 918001 unknown/);
    for (const c of [cycle({ known: false, why: 'slurmd (slurmd) failed: spawn ENOENT' }), cycle()]) {
      expect(status(c)).toEqual({ nvidia0: 'sole', nvidia1: 'sole', nvidia2: 'idle' });
      expect(c.attribution.gpus?.[0]?.why).toMatch(/allocation unknown/);
      expect(points(c, NODE_METRICS.jobGpuAllocated.name)).toEqual([]);
    }
  });
});
