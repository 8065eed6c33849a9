/**
 * The node agent beside job files on real FUSE filesystems whose getattr blocks (a server that is
 * down), refuses (EACCES: a user's own mount refusing root) or fails (EIO: an NFS fail-over), on
 * the real /proc. Each trapped file is held by a job process that also holds a stand-in uverbs
 * device, and by a process outside every job. The agent must attribute exactly, keep cycling,
 * answer scrapes and stop on SIGTERM, and never send the traps a getattr: each trap counts the
 * requests it trapped, and only the test's own probes may be among them.
 *
 * sysfs and the cgroup tree are synthetic (no HCA, no Slurm here); their cgroup.procs list the
 * real PIDs of the test's processes.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeHca } from '../../src/demo/nodetree.js';
import { parseExposition, valueOf } from '../support/exposition.js';
import { buildFuseTrap, fuseGate, FuseTrap, type TrapMode } from '../support/fuse-trap.js';
import {
  jobIdsOn,
  portTable,
  scrape,
  startNodeAgentProcess,
  statusOf,
  unreadableOutsideJobs,
  type AgentProcess,
} from '../support/node-agent-process.js';
import { leaseStandIns, mknodStandIn, pickStandIns, type StandIn } from '../support/stand-in-devices.js';
import { BIN } from '../support/stopping.js';
import { stopChild, waitFor } from '../support/tools.js';

const gate = fuseGate();
const TRAPS: readonly TrapMode[] = ['block', 'eacces', 'eio'];
const HCAS = ['mlx5_0', 'mlx5_1', 'mlx5_2', 'mlx5_3'] as const;
/** Which trap each HCA's job holds a file on; mlx5_3 is held by nobody. */
const JOB_OF: Record<(typeof HCAS)[number], { jobId: string; trap?: TrapMode }> = {
  mlx5_0: { jobId: '101', trap: 'block' },
  mlx5_1: { jobId: '102', trap: 'eacces' },
  mlx5_2: { jobId: '103', trap: 'eio' },
  mlx5_3: { jobId: '104' },
};
const EXPECTED = {
  status: { mlx5_0: 'sole', mlx5_1: 'sole', mlx5_2: 'sole', mlx5_3: 'idle' },
  jobs: { mlx5_0: 1, mlx5_1: 1, mlx5_2: 1, mlx5_3: 0 },
};
const WAIT_MS = 60_000;

/** A process that opens `files` as fds 3, 4 … and sleeps; resolves once all are open. */
async function holder(files: readonly string[]): Promise<ChildProcess> {
  const opens = files.map((_, i) => `${i + 3}<"\${${i + 1}}"`).join(' ');
  // bash: dash takes single-digit fds only.
  const child = spawn('bash', ['-c', `exec ${opens}; exec sleep 900`, 'holder', ...files], { stdio: 'ignore' });
  const pid = child.pid as number;
  await waitFor(`PID ${pid} to hold ${files.join(', ')}`, () =>
    files.every((f, i) => {
      try {
        return fs.readlinkSync(`/proc/${pid}/fd/${i + 3}`) === f;
      } catch {
        return false;
      }
    }),
  );
  return child;
}

/**
 * An unprivileged user's doing, as nobody: a user namespace, an overlay stacked on `lower` (a
 * filesystem the user reaches but the agent must not wait on), and the file `uverbs3` of it held
 * open as fd 3. Resolves with the holder once the fd is open.
 */
async function overlayHolder(dir: string, lower: string): Promise<ChildProcess> {
  const own = fs.mkdtempSync(path.join(dir, 'userns-'));
  fs.chmodSync(own, 0o777);
  const script = [
    'set -e',
    'mkdir "$1/upper" "$1/work" "$1/merged"',
    'mount -t overlay overlay -o "lowerdir=$2,upperdir=$1/upper,workdir=$1/work" "$1/merged"',
    'exec 3<"$1/merged/uverbs3"',
    'echo held',
    'exec sleep 900',
  ].join('\n');
  const child = spawn(
    'setpriv',
    ['--reuid=65534', '--regid=65534', '--clear-groups', 'unshare', '-Urm', 'sh', '-c', script, 'userns', own, lower],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let out = '';
  child.stdout?.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr?.on('data', (d: Buffer) => (out += d.toString()));
  await waitFor(`nobody's overlay holder (${out.trim()})`, () => {
    if (child.exitCode !== null) throw new Error(`the user-namespace overlay failed: ${out}`);
    return out.includes('held');
  });
  return child;
}

/** A sysfs `name` under `dir` with one HCA, mlx5_0, whose uverbs<N> is a stand-in device node made under dir/dev. */
function oneHca(dir: string, name: string, uverbs: number, standIn: StandIn): { sysfs: string; dev: string } {
  const sysfs = path.join(dir, name);
  const dev = path.join(dir, 'dev', `uverbs${uverbs}`);
  mknodStandIn(dev, standIn);
  writeHca(sysfs, {
    name: 'mlx5_0',
    uverbs,
    dev: standIn.dev,
    ports: [{ linkLayer: 'InfiniBand', rate: '200 Gb/sec (4X HDR)', counters: { port_xmit_data: 1 } }],
  });
  return { sysfs, dev };
}

/** A cgroup v2 tree in Slurm's job_<id> layout whose task cgroups list the given PIDs. */
function writeJobCgroups(root: string, jobs: Readonly<Record<string, number>>): void {
  fs.mkdirSync(root, { recursive: true });
  fs.writeFileSync(path.join(root, 'cgroup.controllers'), 'cpu memory pids\n');
  for (const [jobId, pid] of Object.entries(jobs)) {
    const task = path.join(root, 'system.slice', 'slurmstepd.scope', `job_${jobId}`, 'step_0', 'user', 'task_0');
    fs.mkdirSync(task, { recursive: true });
    fs.writeFileSync(path.join(task, 'cgroup.procs'), `${pid}\n`);
  }
}

async function cyclesRun(agent: AgentProcess): Promise<number> {
  const res = await fetch(agent.monitoringUrl);
  return valueOf(parseExposition(await res.text()), 'ib_slurm_exporter_cycles_total') ?? 0;
}

/** Every trap's count of trapped getattr requests. */
function trappedCounts(traps: ReadonlyMap<TrapMode, FuseTrap>): Record<string, number> {
  return Object.fromEntries([...traps].map(([m, t]) => [m, t.trapped()]));
}

/** `slurm-otel node --once` with `args`, run to its end (bounded by the test's deadline). */
function once(args: readonly string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [BIN, 'node', '--once', '--log-format', 'plain', ...args], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let [stdout, stderr] = ['', ''];
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), WAIT_MS);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

describe.skipIf(gate.skip)('node agent beside FUSE filesystems that hang, refuse or fail', { timeout: 180_000 }, () => {
  // One directory for the whole file (its mounts outlive each test), made when the file runs.
  let dir = '';
  /** Probes stuck in a getattr that is never answered: they end when the trap goes. */
  const stuck: ChildProcess[] = [];
  const traps = new Map<TrapMode, FuseTrap>();
  const children: ChildProcess[] = [];
  let release: (() => void) | undefined;
  let sysfs = '';
  let standIns: StandIn[] = [];
  let args: string[] = [];

  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'slurm-otel-fuse-'));
    const bin = buildFuseTrap(dir, gate.tools);
    // The agent reads the whole /proc: no other test's processes may hold the stand-ins meanwhile.
    release = await leaseStandIns();
    // Mounted first: the traps hold /dev/fuse, which the stand-ins must then not borrow.
    for (const m of TRAPS) traps.set(m, await FuseTrap.mount(bin, dir, m));
    standIns = pickStandIns(HCAS.length + 1);
    sysfs = path.join(dir, 'sys');
    const devDir = path.join(dir, 'dev');
    fs.mkdirSync(devDir);
    const uverbsFile = (i: number) => path.join(devDir, `uverbs${40 + i}`);
    HCAS.forEach((name, i) => {
      mknodStandIn(uverbsFile(i), standIns[i] as StandIn);
      writeHca(sysfs, {
        name,
        uverbs: 40 + i,
        dev: (standIns[i] as StandIn).dev,
        ports: [{ linkLayer: 'InfiniBand', rate: '200 Gb/sec (4X HDR)', counters: { port_xmit_data: 10 * (i + 1) } }],
      });
    });
    const jobs: Record<string, number> = {};
    for (const [i, name] of HCAS.entries()) {
      const { jobId, trap } = JOB_OF[name];
      if (trap === undefined) continue;
      const p = await holder([uverbsFile(i), (traps.get(trap) as FuseTrap).file()]);
      children.push(p);
      jobs[jobId] = p.pid as number;
    }
    // Outside every job: under the default policy an unreadable one would make every port incomplete.
    children.push(await holder(TRAPS.map((m) => (traps.get(m) as FuseTrap).file())));
    const cgroupfs = path.join(dir, 'cgroup');
    writeJobCgroups(cgroupfs, jobs);
    for (const t of traps.values()) t.arm();
    // The default policy where it can hold: a host whose own processes root cannot read (PID 1 of
    // some sandboxes) makes every port incomplete under it, rightly, whatever the traps do.
    const policy = unreadableOutsideJobs().length === 0 ? 'strict' : 'ignore-outside-jobs';
    args = ['--sysfs-root', sysfs, '--cgroup-root', cgroupfs, '--unreadable-processes', policy];
  }, 120_000);

  /** The test's own processes that a log names as unreadable (whatever the policy made of them). */
  function namedUnreadable(log: string): number[] {
    return children.map((c) => c.pid as number).filter((pid) => new RegExp(`PID ${pid} \\(`).test(log));
  }

  afterAll(async () => {
    for (const c of children) c.kill('SIGKILL');
    for (const t of traps.values()) await t.unmount();
    await Promise.all(
      stuck.map((p) =>
        p.exitCode !== null || p.signalCode !== null ? undefined : new Promise((resolve) => p.once('close', resolve)),
      ),
    );
    release?.();
    if (dir !== '') fs.rmSync(dir, { recursive: true, force: true });
  });

  it('the traps are live: a stat of the held file blocks, or fails with EACCES or EIO', async () => {
    const outsider = children.at(-1)?.pid as number;
    for (const [i, m] of TRAPS.entries()) {
      const trap = traps.get(m) as FuseTrap;
      const before = trap.trapped();
      const probe = spawn('stat', ['-L', `/proc/${outsider}/fd/${i + 3}`], { stdio: ['ignore', 'ignore', 'pipe'] });
      let stderr = '';
      probe.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
      const exited = new Promise<number | null>((resolve) => probe.on('close', resolve));
      await waitFor(`the ${m} trap to trap the probe's getattr`, () => trap.trapped() === before + 1);
      if (m === 'block') {
        // Not even SIGKILL ends a getattr the filesystem has received and never answers.
        expect(probe.exitCode).toBeNull();
        probe.kill('SIGKILL');
        stuck.push(probe);
      } else {
        expect(await exited).not.toBe(0);
        expect(stderr).toMatch(m === 'eacces' ? /Permission denied/ : /Input\/output error/);
      }
    }
  });

  it('the agent attributes exactly, keeps cycling, answers scrapes and stops on SIGTERM, asking no trap', async () => {
    const trappedBefore = trappedCounts(traps);
    const agent = await startNodeAgentProcess(args);
    try {
      const got = await waitFor(
        'the ports as the stand-ins are held',
        async () => {
          const s = await scrape(agent);
          return JSON.stringify(portTable(s, HCAS)) === JSON.stringify(EXPECTED) ? s : undefined;
        },
        WAIT_MS,
      );
      for (const name of HCAS.slice(0, 3))
        expect(jobIdsOn(got, 'ib_slurm_job_transmit_bytes_total', name)).toEqual([JOB_OF[name].jobId]);
      const cycles = await cyclesRun(agent);
      await waitFor('three more cycles', async () => (await cyclesRun(agent)) >= cycles + 3, WAIT_MS);
      expect(portTable(await scrape(agent), HCAS)).toEqual(EXPECTED);
      expect(namedUnreadable(agent.stderr())).toEqual([]);
      const exited = new Promise<number | null>((resolve) => agent.child.once('exit', resolve));
      agent.child.kill('SIGTERM');
      await waitFor('the agent to exit after SIGTERM', () => agent.child.exitCode !== null, 15_000);
      expect(await exited).toBe(0);
    } finally {
      await stopChild(agent.child);
    }
    expect(trappedCounts(traps)).toEqual(trappedBefore);
  });

  it('--once ends with the same attribution, asking no trap', async () => {
    const trappedBefore = trappedCounts(traps);
    const r = await once(args);
    expect(r.code, r.stderr).toBe(0);
    expect(portTable(parseExposition(r.stdout), HCAS), r.stderr).toEqual(EXPECTED);
    expect(namedUnreadable(r.stderr)).toEqual([]);
    expect(trappedCounts(traps)).toEqual(trappedBefore);
  });

  it('a file named like a verbs device on a FUSE mount that allows devices is asked from a child: a file when it answers, uncertain when it refuses; on a nodev mount it is nothing', async () => {
    const bin = path.join(dir, 'fuse-trap');
    const withDev = await FuseTrap.mount(bin, dir, 'ok', ['dev']);
    const refusing = await FuseTrap.mount(bin, dir, 'eacces', ['dev']);
    refusing.arm();
    const noDev = await FuseTrap.mount(bin, dir, 'ok');
    const held: ChildProcess[] = [];
    try {
      const { sysfs: sys2, dev } = oneHca(dir, 'sys2', 50, standIns[HCAS.length] as StandIn);
      /** One job holding the stand-in and `copies` fds on a file named uverbs3 on `trap`: the agent's verdict. */
      const verdict = async (trap: FuseTrap, jobId: string, copies = 1) => {
        const p = await holder([dev, ...Array.from({ length: copies }, () => trap.file('uverbs3'))]);
        held.push(p);
        const cg = path.join(dir, `cgroup-${jobId}`);
        writeJobCgroups(cg, { [jobId]: p.pid as number });
        const r = await once(['--sysfs-root', sys2, '--cgroup-root', cg, ...args.slice(-2)]);
        p.kill('SIGKILL');
        expect(r.code, r.stderr).toBe(0);
        const got = parseExposition(r.stdout);
        return {
          pid: p.pid as number,
          stderr: r.stderr,
          status: statusOf(got, 'mlx5_0'),
          jobs: jobIdsOn(got, 'ib_slurm_job_transmit_bytes_total', 'mlx5_0'),
        };
      };
      const plain = await verdict(noDev, '202');
      expect(plain).toMatchObject({ status: 'sole', jobs: ['202'] });
      const answered = await verdict(withDev, '201');
      expect(answered).toMatchObject({ status: 'sole', jobs: ['201'] });
      // More fds on that file than a cycle asks about (32): one question answers them all.
      const many = await verdict(withDev, '204', 40);
      expect(many, many.stderr).toMatchObject({ status: 'sole', jobs: ['204'] });
      const uncertain = await verdict(refusing, '203');
      expect(uncertain).toMatchObject({ status: 'incomplete', jobs: [] });
      expect(uncertain.stderr).toMatch(new RegExp(`PID ${uncertain.pid} \\(.*may be a verbs device`));
      expect(uncertain.stderr).toContain(`${refusing.file('uverbs3')}: on fuse, stat failed`);
    } finally {
      for (const c of held) c.kill('SIGKILL');
      await withDev.unmount();
      await noDev.unmount();
      await refusing.unmount();
    }
  });
  it("an overlay an unprivileged user stacks in a user namespace on a hung filesystem: never waited on, and it costs only that user's job", async () => {
    const bin = path.join(dir, 'fuse-trap');
    // Root's mount of a filesystem that will hang (NFS, Lustre, FUSE), reachable by every user.
    fs.chmodSync(dir, 0o755);
    const hung = await FuseTrap.mount(bin, dir, 'block', ['allow_other']);
    const answering = await FuseTrap.mount(bin, dir, 'ok', ['allow_other']);
    const held: ChildProcess[] = [];
    try {
      const { sysfs: sys3, dev } = oneHca(dir, 'sys3', 60, standIns[HCAS.length] as StandIn);
      const sole = await holder([dev]);
      const onHung = await overlayHolder(dir, hung.mountpoint);
      const onAnswering = await overlayHolder(dir, answering.mountpoint);
      held.push(sole, onHung, onAnswering);
      hung.arm();
      const cg = path.join(dir, 'cgroup-userns');
      const base = ['--sysfs-root', sys3, '--cgroup-root', cg, ...args.slice(-2)];
      // A regular file on an overlay whose lower layer answers: known as a file, nobody is blinded.
      writeJobCgroups(cg, { '301': sole.pid as number, '302': onAnswering.pid as number });
      const plain = await once(base);
      expect(plain.code, plain.stderr).toBe(0);
      expect(statusOf(parseExposition(plain.stdout), 'mlx5_0'), plain.stderr).toBe('sole');
      expect(namedUnreadable(plain.stderr)).toEqual([]);

      // The same on a hung lower layer: the agent asks from a child it abandons, keeps answering
      // scrapes and stops on SIGTERM; what the fd may be costs the job that holds it.
      fs.rmSync(cg, { recursive: true });
      writeJobCgroups(cg, { '301': sole.pid as number, '303': onHung.pid as number });
      const before = hung.trapped();
      // Where the kernel lists no verbs device, a file named like one can be nothing: not asked.
      const noVerbs = path.join(dir, 'sys-none');
      fs.mkdirSync(path.join(noVerbs, 'class', 'infiniband'), { recursive: true });
      const none = await once(['--sysfs-root', noVerbs, ...base.slice(2)]);
      expect(none.code, none.stderr).toBe(0);
      expect(namedUnreadable(none.stderr)).toEqual([]);
      expect(hung.trapped()).toBe(before);
      const agent = await startNodeAgentProcess([...base, '--collection-interval', '1s']);
      try {
        const probes = async () =>
          valueOf(
            parseExposition(await (await fetch(agent.monitoringUrl)).text()),
            'ib_slurm_exporter_fd_probes_total',
            {
              result: 'timeout',
            },
          ) ?? 0;
        await waitFor('a probe of the hung overlay to be abandoned', async () => (await probes()) >= 1, WAIT_MS);
        const cycles = await cyclesRun(agent);
        await waitFor('three more cycles', async () => (await cyclesRun(agent)) >= cycles + 3, WAIT_MS);
        // The hung mount is asked once, never again: one getattr reached the trap, from the probe.
        expect(await probes()).toBe(1);
        expect(hung.trapped()).toBe(before + 1);
        const got = await scrape(agent);
        expect(statusOf(got, 'mlx5_0')).toBe('incomplete');
        expect(agent.stderr()).toMatch(new RegExp(`PID ${onHung.pid} \\(.*may be a verbs device`));
        expect(agent.stderr()).toMatch(/uverbs3: on overlay, a stat did not answer within/);
        const exited = new Promise<number | null>((resolve) => agent.child.once('exit', resolve));
        agent.child.kill('SIGTERM');
        await waitFor('the agent to exit after SIGTERM', () => agent.child.exitCode !== null, 15_000);
        expect(await exited).toBe(0);
      } finally {
        await stopChild(agent.child);
      }
    } finally {
      for (const c of held) c.kill('SIGKILL');
      // Unmounting the trap ends the probe left stuck in its getattr.
      await hung.unmount();
      await answering.unmount();
    }
  });
});
