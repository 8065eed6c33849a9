/**
 * rdma cgroup evidence on synthetic trees. The machine the tests run on has no
 * rdma cgroup controller mounted, so every rdma.current and /proc/<pid>/cgroup
 * here is written by src/demo/nodetree.ts in the shapes the kernel uses
 * (`mlx5_0 hca_handle=1 hca_object=20 `, one line per device, zeros included);
 * the fd tables made unreadable are really unreadable (mode 000, read unprivileged).
 */
import fs from 'node:fs';
import path from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { NodeCollector } from '../../../src/node/collect.js';
import type { Cycle } from '../../../src/node/join/cycle.js';
import { attributionRows } from '../../../src/node/explain.js';
import { NODE_METRICS } from '../../../src/node/metrics.js';
import { Problems } from '../../../src/node/read/problems.js';
import { parseRdmaCurrent, processCgroupDirs, readRdmaCurrent } from '../../../src/node/read/rdma-cgroup.js';
import { cgroupLines, type UnreadablePolicy } from '../../../src/node/read/unreadable.js';
import { demoTree } from '../../../src/demo/scenarios.js';
import {
  rdmaCurrentText,
  writeTree,
  type JobSpec,
  type ProcSpec,
  type RdmaSpec,
  type TreeLayout,
  type TreeRoots,
} from '../../../src/demo/nodetree.js';
import type { Roots } from '../../../src/node/read/roots.js';
import type { Point } from '../../../src/telemetry/spec.js';
import { asUnprivileged, deny, tmpDir } from '../../support/tmp.js';
import { canMakeDeviceNodes, explainCli, withDeviceNodes } from '../../support/node-tree.js';

const points = (c: Cycle, name: string) => (c.families.find((f) => f.spec.name === name)?.points ?? []) as Point[];
const statuses = (c: Cycle) => Object.fromEntries(c.attribution.verdicts.map((v) => [v.device, v.status]));
const EXACT = { mlx5_0: 'sole', mlx5_1: 'shared', mlx5_2: 'sole', mlx5_3: 'idle' };
const ZERO: RdmaSpec = {};

interface Setup {
  layout?: TreeLayout;
  /** rdma.current of job cgroups, by job id. */
  jobs?: Record<string, RdmaSpec>;
  /** rdma.current of a process's own cgroup, by PID (job tasks or the daemons outside). */
  procs?: Record<number, RdmaSpec>;
  /** /proc/<pid>/cgroup replaced, by PID. */
  cgroups?: Record<number, string>;
  /** HCAs renamed: demo name → the name sysfs, ibdev and rdma.current give. */
  names?: Record<string, string>;
}

/**
 * The demo node (918001 sole on mlx5_0, 918002+918003 share mlx5_1, 918004 sole on mlx5_2, mlx5_3
 * idle) with rdma.current where asked.
 */
function node(s: Setup = {}): TreeRoots {
  const base = demoTree({ layout: s.layout ?? 'v2', nonJobHolder: false });
  const proc = (p: ProcSpec): ProcSpec => ({
    ...p,
    ...(s.procs?.[p.pid] ? { rdma: s.procs[p.pid] } : {}),
    ...(s.cgroups?.[p.pid] ? { cgroup: s.cgroups[p.pid] } : {}),
  });
  const jobs: JobSpec[] = base.jobs.map((j) => ({
    ...j,
    ...(s.jobs?.[j.jobId] ? { rdma: s.jobs[j.jobId] } : {}),
    steps: j.steps.map((st) => ({ ...st, tasks: st.tasks.map(proc) })),
  }));
  const hcas = base.hcas.map((h) => ({ ...h, name: s.names?.[h.name] ?? h.name }));
  return writeTree(tmpDir(), { ...base, hcas, jobs, others: base.others.map(proc) });
}

/**
 * One cycle reading every fd table (as explain does), so the rules for unreadable fd tables are
 * what decides; and checks that the agent's own cycle, which skips the fd tables of processes
 * whose cgroup has rdma.current, reaches the same verdicts.
 */
function cycle(roots: Roots, denyPids: number[] = [], policy: UnreadablePolicy = 'strict'): Cycle {
  for (const pid of denyPids) deny(path.join(roots.procfs, String(pid), 'fd'));
  const run = (readAllFds: boolean) =>
    asUnprivileged(() =>
      new NodeCollector({ roots, fdRescanIntervalMs: 60_000, unreadableProcesses: policy, readAllFds }).cycle(1000),
    );
  const all = run(true);
  expect(statuses(run(false))).toEqual(statuses(all));
  return all;
}

describe('rdma.current', () => {
  it('parses the kernel lines, zeros included', () => {
    const r = parseRdmaCurrent('mlx5_0 hca_handle=2 hca_object=37 \nmlx5_1 hca_handle=0 hca_object=0 \n');
    expect(r.ok && [...r.value]).toEqual([
      ['mlx5_0', { handles: 2, objects: 37 }],
      ['mlx5_1', { handles: 0, objects: 0 }],
    ]);
    const empty = parseRdmaCurrent('');
    expect(empty.ok && empty.value.size).toBe(0);
  });

  it('calls anything else malformed, never zero', () => {
    for (const bad of [
      'mlx5_0 hca_handle=max hca_object=3 \n',
      'mlx5_0\n',
      'mlx5_0 hca_handle=1\n',
      'garbage',
      'mlx5_0 hca_handle=-1 hca_object=0',
    ]) {
      expect(parseRdmaCurrent(bad)).toMatchObject({ ok: false, kind: 'malformed' });
    }
  });

  it('reads back what the tree writer writes, for any charges', () => {
    const device = fc.stringMatching(/^[a-z][a-z0-9_]{0,11}$/);
    const charge = fc.record({ handles: fc.nat(1 << 20), objects: fc.nat(1 << 30) });
    fc.assert(
      fc.property(fc.dictionary(device, charge), (charges) => {
        const r = parseRdmaCurrent(rdmaCurrentText(charges, []));
        expect(r.ok && Object.fromEntries(r.value)).toEqual(charges);
      }),
    );
  });

  it('finds a process cgroup from /proc/<pid>/cgroup: the v1 rdma line, else the v2 line; none for the root', () => {
    const dirs = (text: string) => processCgroupDirs('/cg', cgroupLines(text));
    expect(dirs('0::/system.slice/weka.service\n')).toEqual([
      '/cg/system.slice/weka.service',
      '/cg/unified/system.slice/weka.service',
    ]);
    expect(dirs('12:rdma:/slurm/uid_1/job_5/step_0\n4:freezer:/slurm/uid_1/job_5/step_0\n0::/\n')).toEqual([
      '/cg/rdma/slurm/uid_1/job_5/step_0',
    ]);
    expect(dirs('12:rdma:/\n0::/\n')).toEqual([]);
    expect(dirs('0::/../../etc\n')).toEqual([]);
  });

  it('a missing file is no evidence and no problem; a malformed one is no evidence and counted', () => {
    const dir = tmpDir();
    const problems = new Problems();
    expect(readRdmaCurrent(dir, problems)).toBeUndefined();
    expect(problems.list()).toEqual([]);
    fs.writeFileSync(path.join(dir, 'rdma.current'), 'mlx5_0 hca_handle=x\n');
    expect(readRdmaCurrent(dir, problems)).toBeUndefined();
    expect(problems.list()).toEqual([expect.objectContaining({ source: 'cgroup', kind: 'malformed' })]);
  });
});

describe('attribution with rdma cgroup evidence', () => {
  it('an unreadable process proven idle by its rdma.current leaves attribution exact, even under strict', () => {
    const c = cycle(node({ procs: { 900: ZERO } }), [900]);
    expect(statuses(c)).toEqual(EXACT);
    expect(c.snapshot.gaps).toEqual([]);
    expect(c.snapshot.unreadable).toEqual([
      expect.objectContaining({
        pid: 900,
        effect: 'cleared',
        rdma: { file: expect.stringMatching(/system.slice\/slurmd.service\/rdma.current$/), charged: [] },
      }),
    ]);
    expect(points(c, NODE_METRICS.jobCounters.name).some((p) => p.attributes.job_id === '918001')).toBe(true);
  });

  it('one charged on a single device costs only that device, as a holder outside the jobs', () => {
    const c = cycle(node({ procs: { 900: { mlx5_2: { handles: 1, objects: 12 } } } }), [900]);
    expect(statuses(c)).toEqual({ ...EXACT, mlx5_2: 'nonjob' });
    expect(c.snapshot.holders.get('mlx5_2')?.nonJobEvidence.get(900)).toEqual(['rdma-cgroup']);
    expect(c.snapshot.unreadable[0]).toMatchObject({ effect: 'charged', rdma: { charged: ['mlx5_2'] } });
  });

  it('the root cgroup (no rdma.current) leaves the strict rule', () => {
    const c = cycle(node({ procs: { 41010: ZERO }, cgroups: { 900: '0::/\n' } }), [900]);
    expect(Object.values(statuses(c))).toEqual(['incomplete', 'incomplete', 'incomplete', 'incomplete']);
    expect(c.snapshot.unreadable[0]).toMatchObject({ pid: 900, effect: 'node' });
    expect(c.snapshot.unreadable[0]?.rdma).toBeUndefined();
  });

  it('and so does a controller that is off for its cgroup; ignore-outside-jobs still applies then', () => {
    expect(Object.values(statuses(cycle(node(), [900])))).toEqual([
      'incomplete',
      'incomplete',
      'incomplete',
      'incomplete',
    ]);
    expect(statuses(cycle(node(), [900], 'ignore-outside-jobs'))).toEqual(EXACT);
  });

  it('a malformed rdma.current is no evidence: the strict rule, and a counted problem', () => {
    const c = cycle(node({ procs: { 900: { raw: 'mlx5_0 hca_handle=oops\n' } } }), [900]);
    expect(Object.values(statuses(c))).toEqual(['incomplete', 'incomplete', 'incomplete', 'incomplete']);
    expect(c.snapshot.problems).toContainEqual(expect.objectContaining({ source: 'cgroup', kind: 'malformed' }));
  });

  it('a job charged on a device without any fd there is a holder of it: a port it shares cannot be sole', () => {
    const c = cycle(
      node({ jobs: { '918001': { mlx5_0: { handles: 2, objects: 40 }, mlx5_2: { handles: 1, objects: 5 } } } }),
    );
    expect(statuses(c)).toEqual({ ...EXACT, mlx5_2: 'shared' });
    const h = c.snapshot.holders.get('mlx5_2');
    const key918001 = c.snapshot.allocations.find((a) => a.jobId === '918001')?.key as string;
    const key918004 = c.snapshot.allocations.find((a) => a.jobId === '918004')?.key as string;
    expect(h?.jobEvidence.get(key918001)).toEqual(['rdma-cgroup']);
    expect(h?.jobEvidence.get(key918004)).toEqual(['fd']);
    expect(c.snapshot.holders.get('mlx5_0')?.jobEvidence.get(key918001)).toEqual(['fd', 'rdma-cgroup']);
  });

  it('a job charged on an idle device is its sole user there', () => {
    const c = cycle(
      node({ jobs: { '918004': { mlx5_2: { handles: 1, objects: 5 }, mlx5_3: { handles: 1, objects: 3 } } } }),
    );
    expect(statuses(c)).toEqual({ ...EXACT, mlx5_3: 'sole' });
    expect(c.attribution.verdicts.find((v) => v.device === 'mlx5_3')?.soleJobId).toBe('918004');
  });

  it('an unreadable job process charged on its own device only is no longer blind', () => {
    const c = cycle(node({ procs: { 41010: { mlx5_0: { handles: 1, objects: 9 } } } }), [41010]);
    expect(statuses(c)).toEqual(EXACT);
    expect(c.snapshot.unreadable[0]).toMatchObject({ pid: 41010, scope: 'job', effect: 'charged', job: '918001' });
    expect(c.snapshot.holders.get('mlx5_0')?.jobPids).toContain(41010);
  });

  it("an unreadable job process charged on another job's device makes that port shared", () => {
    const c = cycle(node({ procs: { 41010: { mlx5_2: { handles: 1, objects: 9 } } } }), [41010]);
    expect(statuses(c)).toEqual({ ...EXACT, mlx5_2: 'shared' });
  });

  it('v1: job charges under the rdma hierarchy, process charges from the v1 rdma line', () => {
    const c = cycle(
      node({ layout: 'v1', jobs: { '918004': { mlx5_2: { handles: 1, objects: 5 } } }, procs: { 41010: ZERO } }),
      [41010],
    );
    expect(statuses(c)).toEqual(EXACT);
    expect(c.snapshot.unreadable[0]).toMatchObject({
      effect: 'cleared',
      rdma: { file: expect.stringMatching(/rdma\/slurm\/uid_1000\/job_918001\/step_0\/task_0\/rdma.current$/) },
    });
    const handles = points(c, NODE_METRICS.jobRdmaHandles.name);
    expect(handles.filter((p) => p.value !== 0)).toEqual([
      { attributes: { job_id: '918004', device: 'mlx5_2' }, value: 1 },
    ]);
  });

  it("exports each job cgroup's handles and objects per device, zeros included; nothing for a job without the file", () => {
    const c = cycle(node({ jobs: { '918001': { mlx5_0: { handles: 2, objects: 40 } } } }));
    const by = (name: string) => points(c, name).map((p) => [p.attributes.job_id, p.attributes.device, p.value]);
    expect(by(NODE_METRICS.jobRdmaHandles.name)).toEqual([
      ['918001', 'mlx5_0', 2],
      ['918001', 'mlx5_1', 0],
      ['918001', 'mlx5_2', 0],
      ['918001', 'mlx5_3', 0],
    ]);
    expect(by(NODE_METRICS.jobRdmaObjects.name)).toEqual([
      ['918001', 'mlx5_0', 40],
      ['918001', 'mlx5_1', 0],
      ['918001', 'mlx5_2', 0],
      ['918001', 'mlx5_3', 0],
    ]);
  });
});

describe('device names in rdma.current', () => {
  /** 100 names sysfs does not list, each charged. */
  const ghosts: RdmaSpec = Object.fromEntries(
    Array.from({ length: 100 }, (_, i) => [`ghost_${i}`, { handles: 1, objects: 3 }]),
  );
  const seriesCount = (c: Cycle) => c.families.reduce((n, f) => n + f.points.length, 0);

  it('counts only the devices sysfs lists: 100 ghost names make no series and no holder', () => {
    const plain = cycle(node({ jobs: { '918001': { mlx5_0: { handles: 2, objects: 40 } } } }));
    const c = cycle(
      node({
        jobs: { '918001': { mlx5_0: { handles: 2, objects: 40 }, ...ghosts } },
        procs: { 900: ghosts },
      }),
      [900],
    );
    expect(seriesCount(c)).toBe(seriesCount(plain));
    expect(points(c, NODE_METRICS.jobRdmaHandles.name).map((p) => p.attributes.device)).toEqual([
      'mlx5_0',
      'mlx5_1',
      'mlx5_2',
      'mlx5_3',
    ]);
    expect([...c.snapshot.holders.keys()].filter((d) => !d.startsWith('mlx5_'))).toEqual([]);
    // Charged on no HCA of this node: proven idle, not a holder of 100 devices.
    expect(c.snapshot.unreadable[0]).toMatchObject({ pid: 900, effect: 'cleared', rdma: { charged: [] } });
    expect(statuses(c)).toEqual(EXACT);
  });

  it('a non-ASCII HCA name is read as UTF-8 in ibdev and rdma.current alike: its holders are found', () => {
    const names = { mlx5_0: 'hca_ö0', mlx5_3: 'hca_µ3' };
    const c = cycle(
      node({ names, jobs: { '918004': { mlx5_2: { handles: 1, objects: 5 }, hca_µ3: { handles: 1, objects: 2 } } } }),
    );
    expect(statuses(c)).toEqual({ hca_ö0: 'sole', mlx5_1: 'shared', mlx5_2: 'sole', hca_µ3: 'sole' });
    expect(c.attribution.verdicts.find((v) => v.device === 'hca_ö0')?.soleJobId).toBe('918001');
    expect(c.attribution.verdicts.find((v) => v.device === 'hca_µ3')?.soleJobId).toBe('918004');
    expect(c.snapshot.gaps).toEqual([]);
  });
});

describe('explain names the evidence behind each holder', () => {
  it.runIf(canMakeDeviceNodes('explain of rdma cgroup evidence'))(
    'fd, rdma cgroup, or both, in the rows, the terminal table and the JSON',
    () => {
      const roots = node({
        jobs: { '918001': { mlx5_0: { handles: 2, objects: 40 }, mlx5_2: { handles: 1, objects: 5 } } },
        procs: { 900: { mlx5_3: { handles: 1, objects: 2 } } },
      });
      const rows = attributionRows(cycle(roots, [900]));
      const row = (d: string) => rows.find((r) => r.device === d);
      expect(row('mlx5_0')?.jobs).toEqual([
        expect.objectContaining({ jobId: '918001', evidence: ['fd', 'rdma-cgroup'] }),
      ]);
      expect(row('mlx5_2')?.jobs.map((j) => [j.jobId, j.holders.length, j.evidence])).toEqual([
        ['918004', 2, ['fd']],
        ['918001', 0, ['rdma-cgroup']],
      ]);
      expect(row('mlx5_3')?.nonJob).toEqual([{ pid: 900, comm: 'slurmd', evidence: ['rdma-cgroup'] }]);

      withDeviceNodes(roots); // made as root, read by the unprivileged command
      const text = asUnprivileged(() => explainCli(roots));
      expect(text.status).toBe(0);
      const flat = text.stdout.replace(/\s+/g, ' ');
      // Cells wrap: each holder's line is checked apart from its evidence. The tree's fds name its
      // device nodes by a path with the tree's prefix, which the table shows (as for a chroot's).
      expect(flat).toMatch(/job 918001: 41010 python via.* │ sole .* 41011 python via.* \[fd \+ rdma cgroup\]/);
      expect(flat).toContain('job 918001 [rdma cgroup]');
      expect(flat).toContain('non-job: 900 slurmd [rdma cgroup]');
      expect(flat).toMatch(
        /unreadable: PID 900 .*holds only mlx5_3 \(charged in .*slurmd.service\/rdma.current\): those ports count it as a holder outside the jobs/,
      );
      const json = asUnprivileged(() => explainCli(roots, '--json'));
      const out = JSON.parse(json.stdout) as {
        ports: { device: string; jobs: { jobId: string; evidence: string[] }[] }[];
      };
      expect(out.ports.find((p) => p.device === 'mlx5_2')?.jobs.map((j) => j.evidence)).toEqual([
        ['fd'],
        ['rdma-cgroup'],
      ]);
    },
  );
});

describe('fewer fd tables: the rdma cgroup charges stand in for them', () => {
  /** The demo node with rdma.current in every cgroup, charged as the processes' fds say. */
  const everywhere = (layout: TreeLayout = 'v2') =>
    writeTree(tmpDir(), { ...demoTree({ layout, nonJobHolder: true }), rdmaEverywhere: true });

  for (const layout of ['v2', 'v1'] as const) {
    it(`${layout}: reads no fd table of a process in a cgroup with rdma.current, and attributes exactly as from the fds`, () => {
      const roots = everywhere(layout);
      const fromFds = new NodeCollector({ roots, fdRescanIntervalMs: 60_000, readAllFds: true }).cycle(1000);
      const c = new NodeCollector({ roots, fdRescanIntervalMs: 60_000 }).cycle(1000);
      expect(statuses(c)).toEqual({ mlx5_0: 'sole', mlx5_1: 'shared', mlx5_2: 'sole', mlx5_3: 'nonjob' });
      expect(c.attribution.verdicts.map((v) => [v.device, v.status, v.soleJobId])).toEqual(
        fromFds.attribution.verdicts.map((v) => [v.device, v.status, v.soleJobId]),
      );
      // The agent's cycle names no covered job process; reading every fd table (explain) does.
      expect(c.snapshot.holders.get('mlx5_1')?.jobPids).toEqual([]);
      expect(c.snapshot.holders.get('mlx5_1')?.allocations).toHaveLength(2);
      expect([...(fromFds.snapshot.holders.get('mlx5_1')?.jobPids ?? [])].sort()).toEqual([42010, 42011, 43010, 43011]);
      expect(
        fromFds.snapshot.holders
          .get('mlx5_1')
          ?.jobEvidence.get(fromFds.snapshot.holders.get('mlx5_1')?.allocations[0] as string),
      ).toEqual(['fd', 'rdma-cgroup']);
      if (layout === 'v2') {
        // Only PID 1 (the root cgroup) has its fds read: 40 links; every other process is covered.
        expect(c.snapshot.stats.fdLinksRead).toBe(40);
        expect(c.snapshot.stats.coveredByRdmaCgroup).toBe(c.snapshot.stats.processes - 1);
        expect(c.snapshot.holders.get('mlx5_3')?.nonJobEvidence.get(950)).toEqual(['rdma-cgroup']);
      } else {
        // v1: the processes outside the jobs sit in the rdma root; the 12 job processes are covered.
        expect(c.snapshot.stats.coveredByRdmaCgroup).toBe(12);
        // systemd 40, slurmd 12, the stepd infinity process 3, the storage client 20.
        expect(c.snapshot.stats.fdLinksRead).toBe(40 + 12 + 3 + 20);
        expect(c.snapshot.holders.get('mlx5_3')?.nonJobEvidence.get(950)).toEqual(['fd']);
      }
    });
  }

  it('v1: a job process not listed in the rdma hierarchy has its fds read', () => {
    const roots = everywhere('v1');
    fs.writeFileSync(
      path.join(roots.cgroupfs, 'rdma', 'slurm', 'uid_1000', 'job_918001', 'step_0', 'task_0', 'cgroup.procs'),
      '',
    );
    const c = new NodeCollector({ roots, fdRescanIntervalMs: 60_000 }).cycle(1000);
    expect(c.snapshot.stats.coveredByRdmaCgroup).toBe(11);
    expect(c.snapshot.stats.fdLinksRead).toBe(40 + 12 + 3 + 20 + 64);
    expect(c.snapshot.holders.get('mlx5_0')?.jobPids).toEqual([41010]);
  });

  it('an unreadable fd table in a covered cgroup is never tried, so it costs nothing', () => {
    const roots = everywhere();
    deny(path.join(roots.procfs, '41010', 'fd'));
    const c = asUnprivileged(() => new NodeCollector({ roots, fdRescanIntervalMs: 60_000 }).cycle(1000));
    expect(c.snapshot.unreadable).toEqual([]);
    expect(statuses(c)).toEqual({ mlx5_0: 'sole', mlx5_1: 'shared', mlx5_2: 'sole', mlx5_3: 'nonjob' });
  });

  it('reads fd tables as before on a host without the rdma controller', () => {
    const roots = node({ procs: { 900: ZERO } });
    fs.writeFileSync(path.join(roots.cgroupfs, 'cgroup.controllers'), 'cpuset cpu io memory pids\n');
    const c = new NodeCollector({ roots, fdRescanIntervalMs: 60_000 }).cycle(1000);
    expect(c.snapshot.stats.coveredByRdmaCgroup).toBe(0);
    expect(statuses(c)).toEqual(EXACT);
  });
});
