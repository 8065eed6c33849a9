import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { deviceFilter } from '../../../src/cli/device-patterns.js';
import { NodeCollector } from '../../../src/node/collect.js';
import type { Cycle } from '../../../src/node/join/cycle.js';
import { attributionRows } from '../../../src/node/explain.js';
import { NODE_METRICS } from '../../../src/node/metrics.js';
import { demoTree } from '../../../src/demo/scenarios.js';
import { writeTree, type TreeSpec } from '../../../src/demo/nodetree.js';
import type { DeviceFilter } from '../../../src/node/join/excluded.js';
import type { QpCounter, QpReading } from '../../../src/node/qp/qp-parse.js';
import type { QpReadings } from '../../../src/node/qp/qp-source.js';
import type { Point } from '../../../src/telemetry/spec.js';
import { tmpDir } from '../../support/tmp.js';

/**
 * The demo node with GPUs, 918001's tasks also holding mlx5_3 (uverbs1): 918001 holds mlx5_0,
 * mlx5_3 and nvidia0; 918002 and 918003 share mlx5_1, each with a GPU of its own (nvidia1, nvidia2).
 */
function tree(): TreeSpec {
  const spec = demoTree({ layout: 'v2', nonJobHolder: false, gpus: true });
  const jobs = spec.jobs.map((j) =>
    j.jobId !== '918001'
      ? j
      : { ...j, steps: j.steps.map((s) => ({ ...s, tasks: s.tasks.map((t) => ({ ...t, uverbs: [2, 1] })) })) },
  );
  return { ...spec, jobs };
}

function cycleOf(devices?: DeviceFilter, qp?: QpReadings): Cycle {
  const roots = writeTree(tmpDir(), tree());
  const opts = { roots, fdRescanIntervalMs: 60_000, ...(devices ? { devices } : {}), ...(qp ? { qp } : {}) };
  return new NodeCollector(opts).cycle(1000);
}

/** One fixed reading of per-PID QP counters: a task of 918002 on mlx5_1, one of 918004 on mlx5_2. */
function qpReadings(): QpReadings & { wanted: string[] } {
  const counter = (device: string, pid: number): QpCounter => ({
    device,
    port: '1',
    cntn: 4,
    pid,
    qpns: [17],
    values: new Map([['rdma_tx_bytes', 1000n]]),
  });
  const reading: QpReading = {
    seq: 1,
    counters: [counter('mlx5_1', 42010), counter('mlx5_2', 44010)],
    qps: [
      { device: 'mlx5_1', port: '1', pid: 42010 },
      { device: 'mlx5_2', port: '1', pid: 44010 },
    ],
  };
  const wanted: string[] = [];
  return { wanted, latest: () => reading, want: (links) => void wanted.push(...links) };
}

const allPoints = (c: Cycle): Point[] => c.families.flatMap((f) => f.points as Point[]);
const statusOf = (c: Cycle, device: string): string | undefined =>
  c.attribution.verdicts.find((v) => v.device === device)?.status;
const gpuStatus = (c: Cycle, minor: number): string | undefined =>
  c.attribution.gpus?.find((v) => v.unit.gpu.minor === minor)?.status;
const value = (c: Cycle, name: string, attrs: Record<string, string> = {}): number | bigint | undefined =>
  (c.families.find((f) => f.spec.name === name)?.points as Point[] | undefined)?.find((p) =>
    Object.entries(attrs).every(([k, v]) => p.attributes[k] === v),
  )?.value;

/** Points naming an excluded device: by HCA name, by nvidia<minor>, or by the GPU's UUID. */
function naming(c: Cycle, devices: readonly string[], uuids: readonly string[]): Point[] {
  return allPoints(c).filter(
    (p) => devices.includes(String(p.attributes.device)) || uuids.includes(String(p.attributes.UUID)),
  );
}

describe('devices the operator excludes', () => {
  const excluded = deviceFilter({ devicesExclude: 'mlx5_1,mlx5_3,nvidia2' });

  it('without a filter, the devices to exclude have series and holders (what the filter takes away)', () => {
    const c = cycleOf();
    const uuid2 = c.snapshot.gpus.units.find((u) => u.gpu.minor === 2)?.gpu.uuid as string;
    expect(naming(c, ['mlx5_1', 'mlx5_3', 'nvidia2'], [uuid2]).length).toBeGreaterThan(0);
    expect([statusOf(c, 'mlx5_0'), statusOf(c, 'mlx5_1'), statusOf(c, 'mlx5_3')]).toEqual(['sole', 'shared', 'sole']);
    expect(gpuStatus(c, 2)).toBe('sole');
    expect(value(c, NODE_METRICS.unattributedJobs.name)).toBe(2);
  });

  it('an excluded device has no series at all, and the others are judged as before', () => {
    const before = cycleOf();
    const c = cycleOf(excluded);
    const uuid2 = before.snapshot.gpus.units.find((u) => u.gpu.minor === 2)?.gpu.uuid as string;
    expect(naming(c, ['mlx5_1', 'mlx5_3', 'nvidia2'], [uuid2])).toEqual([]);
    expect(c.attribution.verdicts.map((v) => v.device)).toEqual(['mlx5_0', 'mlx5_2']);
    // 918001 holds mlx5_0 and the excluded mlx5_3: mlx5_0 is its own as before, with its series.
    expect(statusOf(c, 'mlx5_0')).toBe('sole');
    expect(value(c, NODE_METRICS.jobDeviceAttributed.name, { job_id: '918001', device: 'mlx5_0' })).toBe(1);
    expect(statusOf(c, 'mlx5_2')).toBe('sole');
    expect([gpuStatus(c, 0), gpuStatus(c, 1), gpuStatus(c, 2)]).toEqual(['sole', 'sole', undefined]);
  });

  it('a job holding only excluded devices holds nothing here', () => {
    const c = cycleOf(excluded);
    // 918003 held only mlx5_1 and nvidia2: no series names it, and it is no unattributed job.
    expect(allPoints(c).some((p) => p.attributes.job_id === '918003' && 'device' in p.attributes)).toBe(false);
    expect(value(c, NODE_METRICS.unattributedJobs.name)).toBe(0);
    expect([...c.snapshot.holders.keys()].sort()).toEqual(['mlx5_0', 'mlx5_2']);
  });

  it('names what it left out and why, for explain and the landing page', () => {
    const c = cycleOf(excluded);
    expect(c.snapshot.excluded?.map((e) => [e.kind, e.device, e.why])).toEqual([
      ['hca', 'mlx5_1', 'excluded by --devices-exclude mlx5_1'],
      ['hca', 'mlx5_3', 'excluded by --devices-exclude mlx5_3'],
      ['gpu', 'nvidia2', 'excluded by --devices-exclude nvidia2'],
    ]);
    const rows = attributionRows(c).filter((r) => r.status === 'excluded');
    expect(rows.map((r) => [r.device, r.port, r.why])).toEqual([
      ['mlx5_1', '1', 'excluded by --devices-exclude mlx5_1'],
      ['mlx5_3', '1', 'excluded by --devices-exclude mlx5_3'],
    ]);
  });

  it('per-job QP counters: none on an excluded HCA, and its links are not asked for', () => {
    const job = (c: Cycle): string[] =>
      (c.families.find((f) => f.spec.name === NODE_METRICS.jobQps.name)?.points ?? []).map(
        (p) => `${String(p.attributes.job_id)} ${String(p.attributes.device)}`,
      );
    expect(job(cycleOf(undefined, qpReadings()))).toEqual(['918002 mlx5_1', '918004 mlx5_2']);
    const qp = qpReadings();
    const c = cycleOf(excluded, qp);
    expect(job(c)).toEqual(['918004 mlx5_2']);
    expect(naming(c, ['mlx5_1'], [])).toEqual([]);
    expect(qp.wanted).toEqual(['mlx5_0/1', 'mlx5_2/1']);
  });

  it('an excluded HCA is not read at all: its files are neither opened nor counted as problems', () => {
    // mlx5_1's counter and state files become FIFOs: a read of them is a sysfs problem, counted.
    const roots = writeTree(tmpDir(), tree());
    const port = path.join(roots.sysfs, 'class', 'infiniband', 'mlx5_1', 'ports', '1');
    const counter = path.join(port, 'counters', 'port_rcv_data');
    for (const file of [counter, path.join(port, 'state')]) {
      fs.rmSync(file);
      execFileSync('mkfifo', [file]);
    }
    const run = (devices?: DeviceFilter): Cycle =>
      // As the running agent reads: counter files held open between cycles.
      new NodeCollector({
        roots,
        fdRescanIntervalMs: 60_000,
        holdCounterFiles: 2048,
        ...(devices ? { devices } : {}),
      }).cycle(1000);
    const sysfsProblems = (c: Cycle): string[] =>
      c.snapshot.problems.filter((p) => p.source === 'sysfs').map((p) => p.example);
    // The control: read, the FIFOs are problems naming mlx5_1.
    expect(sysfsProblems(run()).join('\n')).toMatch(/mlx5_1/);
    const c = run(excluded);
    expect(c.failed).toBeUndefined();
    expect(sysfsProblems(c)).toEqual([]);
    expect(c.snapshot.hca.hcas.map((h) => h.device)).toEqual(['mlx5_0', 'mlx5_2']);
    expect(naming(c, ['mlx5_1', 'mlx5_3'], [])).toEqual([]);
    // Still listed, with its ports, for explain.
    expect(
      attributionRows(c)
        .filter((r) => r.device === 'mlx5_1')
        .map((r) => [r.port, r.status]),
    ).toEqual([['1', 'excluded']]);
  });

  it('--devices-include keeps only what it matches', () => {
    const c = cycleOf(deviceFilter({ devicesInclude: 'mlx5_0' }));
    expect(c.attribution.verdicts.map((v) => v.device)).toEqual(['mlx5_0']);
    expect(c.attribution.gpus).toEqual([]);
    expect(allPoints(c).filter((p) => 'UUID' in p.attributes)).toEqual([]);
  });
});
