import fs from 'node:fs';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { NodeRunner } from '../../../src/node/agent.js';
import { inSlurmJob } from '../../../src/node/read/cgroups.js';
import { NodeCollector } from '../../../src/node/collect.js';
import type { Cycle } from '../../../src/node/join/cycle.js';
import { NODE_METRICS } from '../../../src/node/metrics.js';
import {
  cgroupLines,
  displayCgroup,
  readPrivileges,
  unreadableCause,
  type UnreadablePolicy,
} from '../../../src/node/read/unreadable.js';
import { demoTree } from '../../../src/demo/scenarios.js';
import { writeHca, writeProcess, writeTree } from '../../../src/demo/nodetree.js';
import type { Roots } from '../../../src/node/read/roots.js';
import type { Point } from '../../../src/telemetry/spec.js';
import { nodeAgentOptions } from '../../support/agents.js';
import { capturingLogger } from '../../support/log.js';
import { slurmTreesOnHost } from '../../support/host.js';
import { asUnprivileged, asUnprivilegedAsync, deny, tmpDir } from '../../support/tmp.js';

const BIN = path.resolve('dist/src/cli/main.js');

function points(c: Cycle, name: string): Point[] {
  return (c.families.find((f) => f.spec.name === name)?.points ?? []) as Point[];
}

const unreadableCount = (c: Cycle, scope: string) =>
  points(c, NODE_METRICS.unreadableProcesses.name).find((p) => p.attributes.scope === scope)?.value;
const statuses = (c: Cycle) => Object.fromEntries(c.attribution.verdicts.map((v) => [v.device, v.status]));
const jobSeriesOf = (c: Cycle, job: string) =>
  points(c, NODE_METRICS.jobCounters.name).filter((p) => p.attributes.job_id === job);

/** The demo node (918001 sole on mlx5_0, 918002+918003 share mlx5_1, 918004 sole on mlx5_2, mlx5_3 idle). */
function demoNode(nonJobHolder = false): Roots {
  return writeTree(tmpDir(), demoTree({ layout: 'v2', nonJobHolder }));
}

function cycleWith(roots: Roots, policy: UnreadablePolicy, denyPids: number[]): Cycle {
  for (const pid of denyPids) deny(path.join(roots.procfs, String(pid), 'fd'));
  return asUnprivileged(() =>
    new NodeCollector({ roots, fdRescanIntervalMs: 60_000, unreadableProcesses: policy }).cycle(1000),
  );
}

function writeStatus(procfs: string, uid: number, capEff: string): void {
  fs.mkdirSync(path.join(procfs, 'self'), { recursive: true });
  fs.writeFileSync(
    path.join(procfs, 'self', 'status'),
    `Name:\tnode\nUid:\t${uid}\t${uid}\t${uid}\t${uid}\nCapInh:\t0000000000000000\nCapEff:\t${capEff}\n`,
  );
}

describe('unreadable processes on a synthetic node', () => {
  it('strict: one outside the jobs makes every port incomplete, named in the gap', () => {
    const c = cycleWith(demoNode(), 'strict', [900]);
    expect(Object.values(statuses(c))).toEqual(['incomplete', 'incomplete', 'incomplete', 'incomplete']);
    expect(c.snapshot.gaps).toEqual([
      'PID 900 (slurmd, cgroup /system.slice/slurmd.service): fd table unreadable (EACCES)',
    ]);
    expect(c.snapshot.unreadable).toEqual([
      expect.objectContaining({ pid: 900, comm: 'slurmd', errno: 'EACCES', scope: 'outside', effect: 'node' }),
    ]);
    expect(unreadableCount(c, 'outside')).toBe(1);
    expect(unreadableCount(c, 'job')).toBe(0);
    expect(points(c, NODE_METRICS.jobCounters.name)).toEqual([]);
  });

  it('ignore-outside-jobs: one outside the jobs is assumed to hold no HCA, and still counted', () => {
    const c = cycleWith(demoNode(), 'ignore-outside-jobs', [900]);
    expect(c.snapshot.gaps).toEqual([]);
    expect(statuses(c)).toEqual({ mlx5_0: 'sole', mlx5_1: 'shared', mlx5_2: 'sole', mlx5_3: 'idle' });
    expect(c.snapshot.unreadable).toEqual([expect.objectContaining({ pid: 900, scope: 'outside', effect: 'ignored' })]);
    expect(unreadableCount(c, 'outside')).toBe(1);
    expect(jobSeriesOf(c, '918001').length).toBeGreaterThan(0);
  });

  for (const policy of ['strict', 'ignore-outside-jobs'] as const) {
    it(`${policy}: an unreadable job process suppresses its job and every port it could share`, () => {
      const c = cycleWith(demoNode(true), policy, [41010]);
      expect(c.snapshot.gaps).toEqual([]);
      // 918001 may hold any device: it is sole nowhere, 918004 is not sole on mlx5_2, idle is unknown;
      // mlx5_1 (two jobs) stays shared and mlx5_3 (a storage client) stays nonjob whatever 918001 holds.
      expect(statuses(c)).toEqual({ mlx5_0: 'incomplete', mlx5_1: 'shared', mlx5_2: 'incomplete', mlx5_3: 'nonjob' });
      expect(c.snapshot.unreadable).toEqual([
        expect.objectContaining({
          pid: 41010,
          scope: 'job',
          effect: 'job',
          job: '918001',
          cgroup: '/system.slice/slurmstepd.scope/job_918001/step_0/user/task_0',
        }),
      ]);
      expect(c.attribution.verdicts.find((v) => v.device === 'mlx5_2')?.why).toMatch(
        /job 918001 .*PID 41010 python.*may hold this device too/,
      );
      expect(jobSeriesOf(c, '918001')).toEqual([]);
      expect(jobSeriesOf(c, '918004')).toEqual([]);
      expect(unreadableCount(c, 'job')).toBe(1);
      expect(unreadableCount(c, 'outside')).toBe(0);
    });
  }

  it('an idle port is unknown while a job process is unreadable, and attribution returns when it is readable', () => {
    const roots = demoNode();
    const collector = new NodeCollector({
      roots,
      fdRescanIntervalMs: 60_000,
      unreadableProcesses: 'ignore-outside-jobs',
    });
    const fd = path.join(roots.procfs, '44010', 'fd');
    deny(fd);
    expect(statuses(asUnprivileged(() => collector.cycle(1000))).mlx5_3).toBe('incomplete');
    fs.chmodSync(fd, 0o755);
    const after = asUnprivileged(() => collector.cycle(2000));
    expect(statuses(after)).toEqual({ mlx5_0: 'sole', mlx5_1: 'shared', mlx5_2: 'sole', mlx5_3: 'idle' });
    expect(after.snapshot.unreadable).toEqual([]);
  });

  it('ignore-outside-jobs trusts "outside" only from the cgroup file: a job cgroup the scan missed, or no cgroup, costs every port', () => {
    const roots = demoNode();
    writeProcess(roots.procfs, {
      pid: 970,
      comm: 'late',
      cgroup: '0::/system.slice/slurmstepd.scope/job_999/step_0/user/task_0\n',
    });
    writeProcess(roots.procfs, { pid: 971, comm: 'odd' });
    deny(path.join(roots.procfs, '971', 'cgroup'));
    // Its stat denied too: unknown, not taken for exited.
    writeProcess(roots.procfs, { pid: 972, comm: 'odder' });
    for (const f of ['stat', 'cgroup']) deny(path.join(roots.procfs, '972', f));
    const c = cycleWith(roots, 'ignore-outside-jobs', [970, 971]);
    expect(c.snapshot.unreadable).toEqual([
      expect.objectContaining({ pid: 970, scope: 'job', effect: 'node' }),
      expect.objectContaining({ pid: 971, scope: 'outside', effect: 'node', cgroup: '?' }),
      expect.objectContaining({ pid: 972, scope: 'outside', effect: 'node', cgroup: '?', errno: 'EACCES' }),
    ]);
    expect(Object.values(statuses(c))).toEqual(['incomplete', 'incomplete', 'incomplete', 'incomplete']);
  });

  it('gives the cause that fits the agent: missing capabilities, or (having them) an LSM with the way out', () => {
    const roots = demoNode();
    writeStatus(roots.procfs, 1000, '0000000000000000');
    expect(cycleWith(roots, 'strict', [900]).snapshot.unreadable[0]?.cause).toBe(
      'the agent runs as uid 1000 without CAP_SYS_PTRACE and CAP_DAC_READ_SEARCH: run it as root or grant it CAP_SYS_PTRACE and CAP_DAC_READ_SEARCH',
    );
    writeStatus(roots.procfs, 0, '00000000a80425fb'); // a container's default set: no CAP_SYS_PTRACE, no CAP_DAC_READ_SEARCH
    expect(cycleWith(roots, 'strict', []).snapshot.unreadable[0]?.cause).toMatch(
      /^the agent runs as root but without CAP_SYS_PTRACE and CAP_DAC_READ_SEARCH/,
    );
    writeStatus(roots.procfs, 999, '0000000000080004'); // exactly the two capabilities
    const lsm = cycleWith(roots, 'strict', []).snapshot.unreadable[0]?.cause;
    expect(lsm).toMatch(
      /^the agent has CAP_SYS_PTRACE and CAP_DAC_READ_SEARCH, so a security module .* or a protected process/,
    );
    expect(lsm).toContain('--unreadable-processes ignore-outside-jobs');
    expect(lsm).not.toMatch(/run .* as root/);
  });
});

describe('unreadable helpers', () => {
  it('reads the effective uid and capabilities from <procfs>/self/status', () => {
    const procfs = tmpDir();
    expect(readPrivileges(procfs)).toBeUndefined();
    writeStatus(procfs, 0, '000001fffeffffff');
    expect(readPrivileges(procfs)).toEqual({ uid: 0, ptrace: true, dacReadSearch: true });
    writeStatus(procfs, 42, '0000000000080000');
    expect(readPrivileges(procfs)).toEqual({ uid: 42, ptrace: true, dacReadSearch: false });
  });

  it('names an error that is not a permission error as such', () => {
    expect(unreadableCause('EIO', { uid: 0, ptrace: true, dacReadSearch: true }, true)).toBe(
      'unexpected EIO reading the fd table',
    );
  });

  it('shows the most telling line of /proc/<pid>/cgroup', () => {
    const show = (text: string) => displayCgroup(cgroupLines(text));
    expect(show('0::/system.slice/weka.service\n')).toBe('/system.slice/weka.service');
    expect(
      show(
        '9:name=systemd:/\n6:freezer:/slurm_n1/uid_0/job_7/step_0\n4:memory:/slurm_n1/uid_0/job_7/step_0/task_0\n0::/\n',
      ),
    ).toBe('freezer:/slurm_n1/uid_0/job_7/step_0');
    expect(show('8:pids:/system.slice/sshd.service\n6:freezer:/\n0::/\n')).toBe('pids:/system.slice/sshd.service');
    expect(show('9:name=systemd:/\n6:freezer:/\n0::/\n')).toBe('/');
    expect(show('')).toBe('?');
  });

  it("tells a Slurm job cgroup path from Slurm's own and from the rest", () => {
    expect(inSlurmJob('/system.slice/slurmstepd.scope/job_5/step_0/user/task_0')).toBe(true);
    expect(inSlurmJob('/a.slice/n1_slurmstepd.scope/sEKNKTV3WPV500/step_0/slurm')).toBe(true);
    expect(inSlurmJob('/slurm_n1/uid_1000/job_77/step_batch')).toBe(true);
    expect(inSlurmJob('/slurm/uid_0/job_8')).toBe(true);
    expect(inSlurmJob('/system.slice/slurmstepd.scope/system')).toBe(false);
    expect(inSlurmJob('/system.slice/slurmd.service')).toBe(false);
    expect(inSlurmJob('/slurm_n1/system')).toBe(false);
  });
});

describe('the agent log', () => {
  it('names each unreadable process once, while it stays unreadable', async () => {
    const roots = demoNode();
    deny(path.join(roots.procfs, '900', 'fd'));
    const { logger, lines } = capturingLogger();
    const runner = new NodeRunner(nodeAgentOptions(roots, { logger }));
    await asUnprivilegedAsync(() => runner.cycle());
    await asUnprivilegedAsync(() => runner.cycle());
    await runner.shutdown();
    expect(runner.landing.text).toMatch(
      /<tr data-pid="900" data-effect="node"><td>900<\/td><td>slurmd<\/td><td><code>\/system.slice\/slurmd.service<\/code><\/td><td>EACCES<\/td><td>outside<\/td>/,
    );
    const named = lines.filter((l) => l.pid === 900);
    expect(named).toHaveLength(1);
    expect(named[0]).toMatchObject({
      comm: 'slurmd',
      cgroup: '/system.slice/slurmd.service',
      errno: 'EACCES',
      scope: 'outside',
      effect: 'node',
    });
    expect(named[0]?.msg).toMatch(
      /^PID 900 \(slurmd, cgroup \/system.slice\/slurmd.service\): fd table unreadable \(EACCES\): .*; every port is incomplete$/,
    );
  });

  it('warns once per change when the cgroup root holds no Slurm hierarchy', async () => {
    const roots = demoNode();
    const scope = path.join(roots.cgroupfs, 'system.slice', 'slurmstepd.scope');
    const moved = path.join(roots.cgroupfs, 'system.slice', 'moved');
    const { logger, lines } = capturingLogger();
    const runner = new NodeRunner(nodeAgentOptions(roots, { logger }));
    const noSlurm = () => lines.filter((l) => l.msg.startsWith('no Slurm job cgroups found'));
    await runner.cycle();
    expect(noSlurm()).toEqual([]);
    fs.renameSync(scope, moved);
    const gone = await runner.cycle();
    await runner.cycle();
    expect(noSlurm()).toHaveLength(1);
    expect(noSlurm()[0]).toMatchObject({ level: 'warn', cgroupRoot: roots.cgroupfs });
    expect(noSlurm()[0]?.msg).toContain(
      `\`*slurmstepd.scope\` under \`*.slice\` in the cgroup v2 tree ${roots.cgroupfs}`,
    );
    expect(points(gone, NODE_METRICS.cgroupFoundSlurm.name)[0]?.value).toBe(0);
    expect(points(gone, NODE_METRICS.cgroupLayout.name)).toEqual([]);
    const page = runner.landing;
    expect(page.text).toContain('id="no-slurm"');
    // Rendered once a cycle, when first asked for: the next cycle's page is its own.
    expect(runner.landing).toBe(page);
    fs.renameSync(moved, scope);
    const back = await runner.cycle();
    expect(lines.filter((l) => l.msg === 'Slurm cgroup hierarchy found')).toHaveLength(1);
    expect(points(back, NODE_METRICS.cgroupFoundSlurm.name)[0]?.value).toBe(1);
    expect(points(back, NODE_METRICS.cgroupLayout.name).length).toBeGreaterThan(0);
    expect(runner.landing.text).not.toContain('id="no-slurm"');
    await runner.shutdown();
  });
});

// This host: PID 1's /proc/1/fd links are EACCES even to root, and no Slurm runs (unless a test starts one).
describe('on this host (real /proc and /sys/fs/cgroup)', () => {
  const pid1Readable = (): boolean => {
    try {
      for (const fd of fs.readdirSync('/proc/1/fd')) fs.readlinkSync(`/proc/1/fd/${fd}`);
      return true;
    } catch {
      return false;
    }
  };
  const skipUnlessRootAndPid1Hidden = (ctx: { skip: (note: string) => void }) => {
    if (process.geteuid?.() !== 0)
      ctx.skip('needs root: the test checks the wording for an agent that has every capability');
    if (pid1Readable()) ctx.skip("PID 1's fd table is readable on this host: nothing to report");
  };
  const realRoots = (): Roots => {
    const sysfs = path.join(tmpDir(), 'sys');
    writeHca(sysfs, {
      name: 'mlx5_0',
      uverbs: 7,
      ports: [{ linkLayer: 'InfiniBand', rate: '400 Gb/sec (4X NDR)', counters: { port_xmit_data: 1 } }],
    });
    return { sysfs, procfs: '/proc', cgroupfs: '/sys/fs/cgroup' };
  };

  it('strict: reports PID 1 by name, cgroup and errno, with the LSM / protected-process cause', (ctx) => {
    skipUnlessRootAndPid1Hidden(ctx);
    const c = new NodeCollector({
      roots: realRoots(),
      fdRescanIntervalMs: 60_000,
      unreadableProcesses: 'strict',
    }).cycle();
    const pid1 = c.snapshot.unreadable.find((u) => u.pid === 1);
    expect(pid1).toMatchObject({
      comm: fs.readFileSync('/proc/1/comm', 'utf8').trim(),
      errno: 'EACCES',
      scope: 'outside',
      effect: 'node',
    });
    expect(pid1?.cgroup).toMatch(/^(?:[\w=,]+:)?\//);
    expect(pid1?.cause).toMatch(
      /^the agent has CAP_SYS_PTRACE and CAP_DAC_READ_SEARCH, so a security module .* or a protected process.*--unreadable-processes ignore-outside-jobs/,
    );
    expect(c.snapshot.gaps.some((g) => g.startsWith('PID 1 ('))).toBe(true);
    expect(statuses(c)).toEqual({ mlx5_0: 'incomplete' });
    expect(unreadableCount(c, 'outside')).toBeGreaterThanOrEqual(1);
  });

  it('ignore-outside-jobs: PID 1, outside every job cgroup, is ignored', (ctx) => {
    skipUnlessRootAndPid1Hidden(ctx);
    const c = new NodeCollector({
      roots: realRoots(),
      fdRescanIntervalMs: 60_000,
      unreadableProcesses: 'ignore-outside-jobs',
    }).cycle();
    expect(c.snapshot.unreadable.find((u) => u.pid === 1)).toMatchObject({ scope: 'outside', effect: 'ignored' });
    expect(c.snapshot.gaps.filter((g) => g.startsWith('PID 1 ('))).toEqual([]);
    // A test holding stand-in /dev/infiniband files in real Slurm jobs may run at the same time.
    if (c.snapshot.gaps.length > 0 || c.snapshot.holders.size > 0)
      ctx.skip(
        `other processes hold uverbs devices here now (${c.snapshot.gaps.join('; ')}): the port's status is theirs`,
      );
    expect(statuses(c)).toEqual({ mlx5_0: 'idle' });
  });

  it('slurm-otel node --once and explain: no Slurm hierarchy here (found_slurm 0, said first), PID 1 named', (ctx) => {
    skipUnlessRootAndPid1Hidden(ctx);
    const roots = realRoots();
    const args = ['--sysfs-root', roots.sysfs, '--procfs-root', '/proc', '--cgroup-root', '/sys/fs/cgroup'];
    const run = (extra: string[], env: Record<string, string> = {}) =>
      spawnSync(process.execPath, [BIN, 'node', '--once', ...args, ...extra], {
        encoding: 'utf8',
        env: { PATH: process.env.PATH ?? '', ...env },
      });
    const slurmBefore = slurmTreesOnHost();
    const once = run([]);
    expect(once.status).toBe(0);
    expect(once.stdout).toMatch(/^ib_slurm_port_attribution\{device="mlx5_0",port="1",status="incomplete"\} 1$/m);
    // The policy reaches the agent from the environment, and a flag wins over it: PID 1's log line says.
    const pid1Effect = (stderr: string) =>
      stderr
        .split('\n')
        .filter((l) => l.startsWith('{'))
        .map((l) => JSON.parse(l) as { pid?: number; effect?: string })
        .find((l) => l.pid === 1)?.effect;
    expect(pid1Effect(once.stderr)).toBe('node');
    const env = { IB_SLURM_EXPORTER_UNREADABLE_PROCESSES: 'ignore-outside-jobs' };
    expect(pid1Effect(run([], env).stderr)).toBe('ignored');
    expect(pid1Effect(run(['--unreadable-processes', 'strict'], env).stderr)).toBe('node');
    const explain = spawnSync(process.execPath, [BIN, 'explain', ...args], { encoding: 'utf8' });
    expect(explain.status).toBe(0);
    expect(explain.stdout).toMatch(
      /^unreadable: PID 1 \(.*\): fd table unreadable \(EACCES\): the agent has CAP_SYS_PTRACE/m,
    );
    const json = JSON.parse(
      spawnSync(process.execPath, [BIN, 'explain', '--json', ...args], { encoding: 'utf8' }).stdout,
    ) as { unreadable: { pid: number; effect: string }[]; slurmCgroups: { found: boolean } };
    expect(json.unreadable.find((u) => u.pid === 1)?.effect).toBe('node');
    const trees = [...slurmBefore, ...slurmTreesOnHost()];
    if (trees.length > 0)
      ctx.skip(
        `Slurm cgroup trees exist here (${trees.join(', ')}): someone runs Slurm, so "no Slurm hierarchy" cannot be checked`,
      );
    expect(once.stdout).toMatch(/^ib_slurm_cgroup_scan_found_slurm 0$/m);
    expect(once.stdout).not.toContain('ib_slurm_cgroup_layout_info');
    expect(once.stderr).toMatch(
      /no Slurm job cgroups found: looked for `slurm\*` under each cgroup v1 controller in \/sys\/fs\/cgroup/,
    );
    expect(explain.stdout.split('\n')[0]).toMatch(/^no Slurm job cgroups found: looked for .* in \/sys\/fs\/cgroup/);
    expect(json.slurmCgroups.found).toBe(false);
  });
});
