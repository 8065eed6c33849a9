import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { NodeCollector } from '../../../src/node/collect.js';
import type { Cycle } from '../../../src/node/join/cycle.js';
import { NODE_METRICS } from '../../../src/node/metrics.js';
import { demoTree } from '../../../src/demo/scenarios.js';
import {
  migCapsMinor,
  nvidiaDevices,
  standInGpus,
  writeTree,
  type LinkSpec,
  type ProcSpec,
  type TreeSpec,
} from '../../../src/demo/nodetree.js';
import type { Point } from '../../../src/telemetry/spec.js';
import { asUnprivileged, deny, tmpDir } from '../../support/tmp.js';

const GPUS = standInGpus(4);
/** GPU 3 runs MIG: one GPU instance (1) with one compute instance (0). */
const NVIDIA = { gpus: [...GPUS.slice(0, 3), { ...(GPUS[3] as (typeof GPUS)[number]), mig: [{ gi: 1, cis: [0] }] }] };
const CAPS = (gi: number, ci?: number) => `/dev/nvidia-caps/nvidia-cap${migCapsMinor(3, gi, ci)}`;
const COMMON = ['/dev/nvidiactl', '/dev/nvidia-uvm', '/dev/nvidia-caps/nvidia-cap1', '/dev/nvidia-caps/nvidia-cap2'];
const DEVICES = nvidiaDevices(NVIDIA);
/** fds on device nodes, each with its number (as /proc shows a character device). */
const on = (...targets: string[]): LinkSpec[] => targets.map((target) => ({ target, dev: DEVICES.get(target) }));

/** The demo node, its jobs' first tasks holding GPUs as CUDA processes do (plus the devices that name no GPU). */
function gpuTree(): TreeSpec {
  const spec = demoTree({ layout: 'v2', nonJobHolder: true });
  const held: Record<number, string[]> = {
    0: ['/dev/nvidia0'], // job 918001 alone
    1: ['/dev/nvidia1'], // jobs 918002 and 918003
    2: ['/dev/nvidia1'],
    3: ['/dev/nvidia3', CAPS(1), CAPS(1, 0)], // job 918004 on GPU 3's MIG compute instance
  };
  const jobs = spec.jobs.map((j, i) => {
    const [first, ...rest] = j.steps[0]?.tasks ?? [];
    const task: ProcSpec = {
      ...(first as ProcSpec),
      links: on(...(held[i] ?? []), ...COMMON),
    };
    return { ...j, steps: [{ ...(j.steps[0] as (typeof j.steps)[number]), tasks: [task, ...rest] }] };
  });
  // Outside every job: a monitoring daemon on GPU 2, and one that holds only nvidiactl (no GPU).
  const others: ProcSpec[] = [
    ...spec.others,
    { pid: 960, comm: 'nv-hostengine', links: on('/dev/nvidia2', '/dev/nvidiactl') },
    { pid: 961, comm: 'nvidia-persistenced', links: on('/dev/nvidiactl') },
  ];
  return { ...spec, jobs, others, nvidia: NVIDIA };
}

const verdicts = (c: Cycle) =>
  Object.fromEntries(
    (c.attribution.gpus ?? []).map((v) => [
      `nvidia${v.unit.gpu.minor}${v.unit.gi === undefined ? '' : '/mig'}`,
      v.status,
    ]),
  );
const points = (c: Cycle, name: string): Point[] =>
  (c.families.find((f) => f.spec.name === name)?.points ?? []) as Point[];

describe('GPUs on the fd walk', () => {
  it('attributes each GPU (and MIG compute instance) by the device number its holders hold, under the ports’ rules', () => {
    const roots = writeTree(tmpDir(), gpuTree());
    const c = new NodeCollector({ roots, fdRescanIntervalMs: 60_000 }).cycle(1000);
    expect(verdicts(c)).toEqual({ nvidia0: 'sole', nvidia1: 'shared', nvidia2: 'nonjob', 'nvidia3/mig': 'sole' });
    const holders = points(c, NODE_METRICS.jobGpuHolder.name).map((p) => [
      p.attributes.job_id,
      p.attributes.device,
      p.attributes.GPU_I_ID,
      p.attributes.compute_instance,
      p.value,
    ]);
    expect(holders).toEqual([
      ['918001', 'nvidia0', '', '', 1],
      ['918002', 'nvidia1', '', '', 0],
      ['918003', 'nvidia1', '', '', 0],
      ['918004', 'nvidia3', '1', '0', 1],
    ]);
    const sole = points(c, NODE_METRICS.gpuAttribution.name).filter(
      (p) => p.value === 1 && p.attributes.status === 'sole',
    );
    expect(sole.map((p) => [p.attributes.UUID, p.attributes.pci_bus_id])).toEqual([
      [(GPUS[0] as (typeof GPUS)[number]).uuid, '00000000:18:00.0'],
      [(GPUS[3] as (typeof GPUS)[number]).uuid, '00000000:5D:00.0'],
    ]);
  });

  it('a job process whose fd table is unreadable blinds the GPUs its job could share, whatever the HCA evidence', () => {
    const roots = writeTree(tmpDir(), gpuTree());
    // A second task of job 918002: it may hold any GPU, so GPU 0 (918001 alone) is no longer certain.
    deny(path.join(roots.procfs, '42011', 'fd'));
    const c = asUnprivileged(() => new NodeCollector({ roots, fdRescanIntervalMs: 60_000 }).cycle(1000));
    const v = (c.attribution.gpus ?? []).find((g) => g.unit.gpu.minor === 0);
    expect(v?.status).toBe('incomplete');
    expect(v?.why).toMatch(/job 918002 has a process whose fd table cannot be read/);
  });

  it('a node without the NVIDIA driver has no GPU series and no error', () => {
    const roots = writeTree(tmpDir(), demoTree({ layout: 'v2', nonJobHolder: false }));
    const c = new NodeCollector({ roots, fdRescanIntervalMs: 60_000 }).cycle(1000);
    expect(c.snapshot.gpus).toMatchObject({ present: false, units: [] });
    expect(c.snapshot.gpus.reason).toMatch(/driver/);
    expect(points(c, NODE_METRICS.gpuAttribution.name)).toEqual([]);
    expect(c.snapshot.problems).toEqual([]);
  });
});
