import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { NodeCollector } from '../../src/node/collect.js';
import type { Cycle } from '../../src/node/join/cycle.js';
import { NODE_METRICS } from '../../src/node/metrics.js';
import { DEMO_GPU_HOLDERS, DEMO_IDLE_GPU, demoTree } from '../../src/demo/scenarios.js';
import { writeTree } from '../../src/demo/nodetree.js';
import type { Point } from '../../src/telemetry/spec.js';
import { tmpDir } from '../support/tmp.js';

const points = (c: Cycle, name: string): Point[] =>
  (c.families.find((f) => f.spec.name === name)?.points ?? []) as Point[];

const cycleOf = (gpus: boolean, before?: (sysfs: string) => void): { c: Cycle; collector: NodeCollector } => {
  const roots = writeTree(tmpDir(), demoTree({ layout: 'v2', nonJobHolder: true, gpus }));
  before?.(roots.sysfs);
  const collector = new NodeCollector({ roots, fdRescanIntervalMs: 60_000 });
  return { c: collector.cycle(1000), collector };
};

describe('GPU ↔ HCA locality on the demo node', () => {
  it('relates every GPU to every HCA, with NUMA nodes, joinable by UUID and device', () => {
    const { c } = cycleOf(true);
    const pairs = points(c, NODE_METRICS.gpuHcaLocality.name);
    expect(pairs).toHaveLength(16);
    const gpu0 = pairs.filter((p) => p.attributes.pci_bus_id === '00000000:18:00.0');
    expect(Object.fromEntries(gpu0.map((p) => [p.attributes.device, p.attributes.relation]))).toEqual({
      mlx5_0: 'PIX',
      mlx5_1: 'NODE',
      mlx5_2: 'SYS',
      mlx5_3: 'SYS',
    });
    expect(gpu0.find((p) => p.attributes.device === 'mlx5_2')?.attributes).toMatchObject({
      gpu_numa_node: '0',
      hca_numa_node: '1',
    });
    const uuids = new Set(points(c, NODE_METRICS.gpuAttribution.name).map((p) => p.attributes.UUID));
    for (const p of pairs) expect(uuids.has(p.attributes.UUID as string)).toBe(true);
  });

  it('gives each job the pairs it holds; the job on a far HCA stands out', () => {
    const { c } = cycleOf(true);
    const jobs = points(c, NODE_METRICS.jobGpuHcaLocality.name).map((p) => [
      p.attributes.job_id,
      p.attributes.device,
      p.attributes.relation,
      p.value,
    ]);
    // 918002 and 918003 share mlx5_1: held, not attributed (0); 918004 holds no GPU (its allocated one idles).
    expect(jobs).toEqual([
      ['918001', 'mlx5_0', 'PIX', 1],
      ['918002', 'mlx5_1', 'PIX', 0],
      ['918003', 'mlx5_1', 'SYS', 0],
    ]);
    expect(Object.keys(DEMO_GPU_HOLDERS)).not.toContain(String(DEMO_IDLE_GPU.jobId));
  });

  it('keeps the pairs cycle after cycle, and has no locality series without GPUs', () => {
    const { collector } = cycleOf(true);
    collector.cycle(2000);
    const again = collector.cycle(3000);
    expect(points(again, NODE_METRICS.gpuHcaLocality.name)).toHaveLength(16);
    const plain = cycleOf(false).c;
    expect(points(plain, NODE_METRICS.gpuHcaLocality.name)).toEqual([]);
    expect(points(plain, NODE_METRICS.jobGpuHcaLocality.name)).toEqual([]);
  });

  it('a GPU with no PCI function in sysfs has no pairs and loses nothing else', () => {
    const { c } = cycleOf(true, (sysfs) => fs.rmSync(path.join(sysfs, 'bus/pci/devices/0000:18:00.0')));
    const pairs = points(c, NODE_METRICS.gpuHcaLocality.name);
    expect(pairs).toHaveLength(12);
    expect(pairs.some((p) => p.attributes.pci_bus_id === '00000000:18:00.0')).toBe(false);
    expect(points(c, NODE_METRICS.jobGpuHcaLocality.name).map((p) => p.attributes.job_id)).toEqual([
      '918002',
      '918003',
    ]);
    expect(points(c, NODE_METRICS.jobGpuHolder.name)).toHaveLength(3);
  });
});
