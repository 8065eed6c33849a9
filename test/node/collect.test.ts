import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { NodeCollector } from '../../src/node/collect.js';
import type { Cycle } from '../../src/node/join/cycle.js';
import { NODE_METRICS } from '../../src/node/metrics.js';
import { CounterDrift, demoTree } from '../../src/demo/scenarios.js';
import { jobDirName, uverbsDevice, writeProcess, writeTree, type TreeLayout } from '../../src/demo/nodetree.js';
import type { Roots } from '../../src/node/read/roots.js';
import type { Point } from '../../src/telemetry/spec.js';
import { asUnprivileged, deny, removeProcess, tmpDir } from '../support/tmp.js';
import { turnsDuring } from '../support/turns.js';

function points(c: Cycle, name: string): Point[] {
  return (c.families.find((f) => f.spec.name === name)?.points ?? []) as Point[];
}

function value(c: Cycle, name: string, attrs: Record<string, string>): number | bigint | undefined {
  return points(c, name).find((p) => Object.entries(attrs).every(([k, v]) => p.attributes[k] === v))?.value;
}

const statusOf = (c: Cycle, device: string) => c.attribution.verdicts.find((v) => v.device === device)?.status;

function demo(
  layout: TreeLayout = 'v2',
  nonJobHolder = false,
): { roots: Roots; collector: NodeCollector; drift: CounterDrift } {
  const roots = writeTree(tmpDir(), demoTree({ layout, nonJobHolder }));
  const drift = new CounterDrift(roots.sysfs);
  drift.tick(10);
  return { roots, collector: new NodeCollector({ roots, fdRescanIntervalMs: 60_000 }), drift };
}

describe('node collector on the demo node', () => {
  for (const layout of ['v1', 'v2', 'v2-sluid'] as TreeLayout[]) {
    it(`attributes sole ports and suppresses the shared one (${layout})`, () => {
      const { collector } = demo(layout);
      const c = collector.cycle(1000);
      expect(c.snapshot.gaps).toEqual([]);
      expect(Object.fromEntries(c.attribution.verdicts.map((v) => [v.device, [v.status, ...v.jobs]]))).toEqual({
        mlx5_0: ['sole', '918001'],
        mlx5_1: ['shared', '918002', '918003'],
        mlx5_2: ['sole', '918004'],
        mlx5_3: ['idle'],
      });
      expect(value(c, NODE_METRICS.cgroupLayout.name, { layout })).toBe(1);
    });
  }

  it('gives a job exactly the increase the device saw while it was sole user', () => {
    const { collector, drift } = demo();
    const first = collector.cycle(1000);
    const dev0 = value(first, NODE_METRICS.deviceCounters.name, {
      device: 'mlx5_0',
      counter: 'port_xmit_data',
    }) as bigint;
    drift.tick(3);
    const second = collector.cycle(2000);
    const dev1 = value(second, NODE_METRICS.deviceCounters.name, {
      device: 'mlx5_0',
      counter: 'port_xmit_data',
    }) as bigint;
    expect(dev1 > dev0).toBe(true);
    expect(
      value(second, NODE_METRICS.jobCounters.name, { job_id: '918001', device: 'mlx5_0', counter: 'port_xmit_data' }),
    ).toBe(dev1 - dev0);
    expect(value(second, NODE_METRICS.jobTransmitBytes.name, { job_id: '918001', device: 'mlx5_0' })).toBe(
      (dev1 - dev0) * 4n,
    );
    expect(value(second, NODE_METRICS.deviceTransmitBytes.name, { device: 'mlx5_0' })).toBe(dev1 * 4n);
  });

  it('never gives the shared port a job series, but keeps its device series', () => {
    const { collector } = demo();
    const c = collector.cycle(1000);
    expect(points(c, NODE_METRICS.jobCounters.name).filter((p) => p.attributes.device === 'mlx5_1')).toEqual([]);
    expect(value(c, NODE_METRICS.deviceCounters.name, { device: 'mlx5_1', counter: 'packet_seq_err' })).toBeGreaterThan(
      0n,
    );
    expect(value(c, NODE_METRICS.deviceJobs.name, { device: 'mlx5_1' })).toBe(2);
    expect(value(c, NODE_METRICS.deviceJobs.name, { device: 'mlx5_3' })).toBe(0);
    expect(value(c, NODE_METRICS.jobDeviceAttributed.name, { job_id: '918002', device: 'mlx5_1' })).toBe(0);
    expect(value(c, NODE_METRICS.jobDeviceAttributed.name, { job_id: '918001', device: 'mlx5_0' })).toBe(1);
    expect(value(c, NODE_METRICS.portAttribution.name, { device: 'mlx5_1', status: 'shared' })).toBe(1);
    expect(value(c, NODE_METRICS.portAttribution.name, { device: 'mlx5_1', status: 'sole' })).toBe(0);
    expect(value(c, NODE_METRICS.unattributedJobs.name, {})).toBe(2);
  });

  it('marks a port held by a process outside Slurm as nonjob', () => {
    const { collector } = demo('v2', true);
    expect(statusOf(collector.cycle(1000), 'mlx5_3')).toBe('nonjob');
  });

  it("drops a job's series at the next collection after it ends", () => {
    const { roots, collector } = demo();
    expect(
      points(collector.cycle(1000), NODE_METRICS.jobCounters.name).some((p) => p.attributes.job_id === '918004'),
    ).toBe(true);
    const spec = demoTree({ layout: 'v2', nonJobHolder: false });
    const job = spec.jobs.find((j) => j.jobId === '918004');
    if (!job) throw new Error('demo job');
    fs.rmSync(path.join(roots.cgroupfs, 'system.slice/slurmstepd.scope', jobDirName(job, 'v2')), { recursive: true });
    for (const step of job.steps)
      for (const p of [...step.tasks, ...(step.stepd ? [step.stepd] : [])]) removeProcess(roots.procfs, p.pid);
    const after = collector.cycle(2000);
    expect(points(after, NODE_METRICS.jobCounters.name).some((p) => p.attributes.job_id === '918004')).toBe(false);
    expect(points(after, NODE_METRICS.jobProcesses.name).some((p) => p.attributes.job_id === '918004')).toBe(false);
    expect(statusOf(after, 'mlx5_2')).toBe('idle');
  });

  it('suppresses every port when a PID of a job cgroup is invisible in /proc', () => {
    const { roots, collector } = demo();
    removeProcess(roots.procfs, 41010); // still listed in its cgroup: hidden, not exited
    const c = collector.cycle(1000);
    expect(c.attribution.verdicts.every((v) => v.status === 'incomplete')).toBe(true);
    expect(c.snapshot.gaps.join()).toContain('41010');
    expect(points(c, NODE_METRICS.jobCounters.name)).toEqual([]);
  });

  it('suppresses every port when an fd table outside the jobs is unreadable (strict), and says how many', () => {
    const { roots, collector } = demo();
    deny(path.join(roots.procfs, '900', 'fd'));
    const c = asUnprivileged(() => collector.cycle(1000));
    expect(c.attribution.verdicts.every((v) => v.status === 'incomplete')).toBe(true);
    expect(value(c, NODE_METRICS.unreadableProcesses.name, { scope: 'outside' })).toBe(1);
    expect(points(c, NODE_METRICS.deviceCounters.name).length).toBeGreaterThan(0);
  });

  it('suppresses every port when /proc hides other users and the agent is not root', () => {
    const { roots, collector } = demo();
    fs.mkdirSync(path.join(roots.procfs, 'self'));
    fs.writeFileSync(
      path.join(roots.procfs, 'self', 'mountinfo'),
      `22 27 0:21 / ${roots.procfs} rw,relatime - proc proc rw,hidepid=invisible\n`,
    );
    // The control: root sees every process whatever hidepid says (a non-root run has no root to ask).
    if (process.geteuid?.() === 0)
      expect(collector.cycle(1000).attribution.verdicts.map((v) => v.status)).toContain('sole');
    const c = asUnprivileged(() => collector.cycle(2000));
    expect(c.attribution.verdicts.every((v) => v.status === 'incomplete')).toBe(true);
    expect(c.snapshot.gaps.join()).toContain('hidepid');
  });

  it('suppresses every port when a held uverbs device has no resolvable HCA', () => {
    const { roots, collector } = demo();
    // A uverbs device whose sysfs entry has its number but no ibdev.
    fs.mkdirSync(path.join(roots.sysfs, 'class', 'infiniband_verbs', 'uverbs9'));
    fs.writeFileSync(path.join(roots.sysfs, 'class', 'infiniband_verbs', 'uverbs9', 'dev'), `${uverbsDevice(9)}\n`);
    writeProcess(roots.procfs, { pid: 960, comm: 'odd', uverbs: [9] });
    const c = collector.cycle(1000);
    expect(c.snapshot.gaps).toEqual(['uverbs9: HCA unknown (no readable ibdev)']);
    expect(c.attribution.verdicts.every((v) => v.status === 'incomplete')).toBe(true);
  });

  it('leaves an unresolvable SLUID without job series but counts it and its device use', () => {
    const { roots, collector } = demo('v2-sluid');
    const spec = demoTree({ layout: 'v2-sluid', nonJobHolder: false });
    const job = spec.jobs.find((j) => j.jobId === '918001');
    const stepdPid = job?.steps[0]?.stepd?.pid as number;
    fs.writeFileSync(path.join(roots.procfs, String(stepdPid), 'cmdline'), 'slurmstepd: [infinity]\0');
    const c = collector.cycle(1000);
    expect(value(c, NODE_METRICS.unresolvedAllocations.name, {})).toBe(1);
    expect(statusOf(c, 'mlx5_0')).toBe('incomplete');
    expect(value(c, NODE_METRICS.deviceJobs.name, { device: 'mlx5_0' })).toBe(1);
    expect(points(c, NODE_METRICS.jobCounters.name).some((p) => p.attributes.device === 'mlx5_0')).toBe(false);
  });

  it('runs on a node without InfiniBand and exports no device or job series', () => {
    const dir = tmpDir();
    const roots = { sysfs: path.join(dir, 'sys'), procfs: path.join(dir, 'proc'), cgroupfs: path.join(dir, 'cg') };
    for (const d of Object.values(roots)) fs.mkdirSync(d);
    const c = new NodeCollector({ roots, fdRescanIntervalMs: 60_000 }).cycle(0);
    expect(c.snapshot.hca.present).toBe(false);
    expect(points(c, NODE_METRICS.deviceCounters.name)).toEqual([]);
    expect(points(c, NODE_METRICS.jobCounters.name)).toEqual([]);
  });

  it('fails a cycle that cannot list class/infiniband, keeping the job counters, instead of reporting no HCA', () => {
    const { roots, collector, drift } = demo();
    const counter = { device: 'mlx5_0', counter: 'port_xmit_data' };
    const dev0 = value(collector.cycle(1000), NODE_METRICS.deviceCounters.name, counter) as bigint;
    drift.tick(3);
    const classDir = path.join(roots.sysfs, 'class/infiniband');
    deny(classDir);
    const failed = asUnprivileged(() => collector.cycle(2000));
    fs.chmodSync(classDir, 0o755);
    expect(failed.failed).toMatch(/class\/infiniband.*EACCES/);
    expect(failed.families).toEqual([]);
    expect(failed.snapshot.problems).toContainEqual(
      expect.objectContaining({ source: 'sysfs', kind: 'denied', count: 1 }),
    );
    drift.tick(3);
    const third = collector.cycle(3000);
    const dev2 = value(third, NODE_METRICS.deviceCounters.name, counter) as bigint;
    expect(value(third, NODE_METRICS.jobCounters.name, { job_id: '918001', ...counter })).toBe(dev2 - dev0);
  });

  it('exports port state, physical state and rate, and bytes from counters_ext only when counters/ lacks the file', () => {
    const { roots, collector } = demo();
    const port = path.join(roots.sysfs, 'class/infiniband/mlx5_0/ports/1');
    fs.mkdirSync(path.join(port, 'counters_ext'));
    fs.writeFileSync(path.join(port, 'counters_ext/port_xmit_data_64'), '123456789012\n');
    fs.writeFileSync(path.join(port, 'counters_ext/port_rcv_data_64'), '1000\n');
    fs.rmSync(path.join(port, 'counters/port_rcv_data'));
    const c = collector.cycle(1000);
    const dp = { device: 'mlx5_0', port: '1' };
    const xmit = value(c, NODE_METRICS.deviceCounters.name, { ...dp, counter: 'port_xmit_data' }) as bigint;
    expect(value(c, NODE_METRICS.deviceTransmitBytes.name, dp)).toBe(xmit * 4n);
    expect(value(c, NODE_METRICS.deviceCounters.name, { ...dp, counter: 'port_xmit_data_64' })).toBe(123456789012n);
    expect(value(c, NODE_METRICS.deviceReceiveBytes.name, dp)).toBe(4000n);
    expect(value(c, NODE_METRICS.jobReceiveBytes.name, { job_id: '918001', ...dp })).toBe(0n);
    expect(
      [NODE_METRICS.portState, NODE_METRICS.portPhysicalState, NODE_METRICS.portRate].map((m) => value(c, m.name, dp)),
    ).toEqual([4, 5, 50_000_000_000]);
  });
});

describe('a yielding cycle (the running agent)', () => {
  /** The demo node: pieces of the fd scan end at every check (sliceMs 0), so the pauses are certain. */
  function yielding(): { collector: NodeCollector; straight: NodeCollector } {
    const roots = writeTree(tmpDir(), demoTree({ layout: 'v2', nonJobHolder: true }));
    return {
      collector: new NodeCollector({ roots, fdRescanIntervalMs: 60_000, sliceMs: 0 }),
      straight: new NodeCollector({ roots, fdRescanIntervalMs: 60_000 }),
    };
  }

  it('gives the event loop turns during the fd scan, and reads what a straight cycle reads', async () => {
    const { collector, straight } = yielding();
    const { value: c, turns } = await turnsDuring(() => collector.cycleYielding(undefined, 1000));
    // The other work ran while the cycle was in progress (a scrape, a signal), not after it.
    expect(turns).toBeGreaterThan(1);
    const s = straight.cycle(1000);
    expect(c.attribution.verdicts).toEqual(s.attribution.verdicts);
    expect(c.families).toEqual(s.families);
  });

  it('ends at its next pause once aborted, and the next cycle reads the node whole', async () => {
    const { collector, straight } = yielding();
    const stop = new AbortController();
    const cycle = collector.cycleYielding(stop.signal, 1000);
    setImmediate(() => stop.abort());
    await expect(cycle).rejects.toThrow('stopped');
    const next = await collector.cycleYielding(undefined, 2000);
    expect(next.attribution.verdicts).toEqual(straight.cycle(2000).attribution.verdicts);
  });
});
