/**
 * The node agent on a real kernel RDMA stack: Debian 12's own kernel (linux-image-amd64) booted
 * under qemu, Soft-RoCE (rdma_rxe) devices rxe0..rxe3 on dummy netdevs, real processes holding
 * real uverbs fds (ibv_rc_pingpong -e), job cgroups as slurmstepd makes them under cgroup v2 with
 * the rdma controller on. The host's build (dist/) and node binary run in the guest against its
 * real /sys, /proc and /sys/fs/cgroup.
 *
 * One boot for the whole file (scripts/soft-roce/boot.sh running scripts/soft-roce/guest.sh,
 * whose header describes the node and its phases); the guest writes what it saw, the tests judge
 * it here. The image is made once and cached outside the clone (scripts/soft-roce/image.sh, about
 * 2 minutes the first time, as root). Under CI a missing qemu, debootstrap or e2fsprogs, or a
 * kernel package that cannot be had, fails the file; elsewhere it is skipped, naming the package.
 * SOFT_ROCE_RUN=<dir> judges the output directory of an earlier boot.sh run instead of booting.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseQpResources } from '../support/qp-text.js';
import { contextsOf, parseContexts } from '../../src/node/read/rdma-contexts.js';
import { parseExposition, select, valueOf, type Sample } from '../support/exposition.js';
import { statusOf } from '../support/node-agent-process.js';
import { findTool, run, shouldRun, toolPath } from '../support/tools.js';

const TOOLS = [
  findTool('qemu-system-x86_64', 'qemu-system-x86'),
  findTool('debootstrap', 'debootstrap'),
  findTool('mke2fs', 'e2fsprogs'),
];
const REUSE = process.env.SOFT_ROCE_RUN;
const RXE = ['rxe0', 'rxe1', 'rxe2', 'rxe3'] as const;
/** ibv_rc_pingpong round trips of job 101's traffic (ROUNDS in guest.sh). */
const ROUNDS = 2000;
/** The verdicts guest.sh sets up, while every holder is in place. */
const VERDICTS = { rxe0: 'sole', rxe1: 'shared', rxe2: 'nonjob', rxe3: 'idle' };
/** Image (up to ~5 min cold on a loaded machine) + one boot (guest.sh bounds each step). */
const SETUP_TIMEOUT_MS = 15 * 60_000;

interface ExplainPort {
  device: string;
  status: string;
  jobs: { jobId: string; holders: { pid: number; comm: string }[]; evidence: string[] }[];
  nonJob: { pid: number; comm: string; evidence: string[] }[];
}
interface Explain {
  ports: ExplainPort[];
  unreadable: {
    pid: number;
    errno: string;
    scope: string;
    effect: string;
    job?: string;
    rdma?: { charged: string[] };
    contexts?: { held: string[]; unknownOn: string[] };
  }[];
}

let out = '';
let made: string | undefined;
let skipped: string | undefined;

const read = (name: string): string => fs.readFileSync(path.join(out, name), 'utf8');
const prom = (name: string): Sample[] => parseExposition(read(name));
const explain = (name: string): Explain => JSON.parse(read(name)) as Explain;
/** `name pid` lines of pids.txt. */
const pids = (): Record<string, number> =>
  Object.fromEntries(
    read('pids.txt')
      .trim()
      .split('\n')
      .map((l) => l.split(' '))
      .map(([n, p]) => [n as string, Number(p)]),
  );
/** `device counter value` lines of a hw_counters snapshot → device → counter → value. */
function hw(name: string): Map<string, Map<string, number>> {
  const m = new Map<string, Map<string, number>>();
  for (const line of read(name).trim().split('\n')) {
    const [dev, counter, value] = line.split(' ') as [string, string, string];
    if (!m.has(dev)) m.set(dev, new Map());
    m.get(dev)?.set(counter, Number(value));
  }
  return m;
}
const deviceCounter = (s: Sample[], device: string, counter: string): number | undefined =>
  valueOf(s, 'ib_slurm_device_counters_total', { device, port: '1', counter });
const statuses = (s: Sample[]) => Object.fromEntries(RXE.map((d) => [d, statusOf(s, d)]));

async function bootGuest(): Promise<string | undefined> {
  for (const t of TOOLS) toolPath(t); // under CI: a missing tool fails here, naming its package
  const image = await run('scripts/soft-roce/image.sh', []);
  if (image.code !== 0) {
    const why = `the soft-RoCE guest image could not be made (needs root and Debian's linux-image-amd64): ${image.stderr.trim()}`;
    if (process.env.CI) throw new Error(why);
    return why;
  }
  // One directory for the whole file (test/support/tmp.ts removes its directories after each test).
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'soft-roce-'));
  made = dir;
  const boot = await run('scripts/soft-roce/boot.sh', ['scripts/soft-roce/guest.sh', dir]);
  if (boot.code !== 0) {
    const console = fs.existsSync(path.join(dir, 'console.log'))
      ? fs.readFileSync(path.join(dir, 'console.log'), 'utf8')
      : '';
    throw new Error(`the guest run failed (${boot.code}): ${boot.stderr.trim()}\n${console.slice(-3000)}`);
  }
  out = dir;
  // What the run cost, for the CI log (nothing is asserted on it).
  const wall = /qemu exit .*$/m.exec(fs.readFileSync(path.join(dir, 'console.log'), 'utf8'))?.[0] ?? '';
  process.stderr.write(
    `soft-roce guest: ${wall}; guest uptime at each step: ${read('timings.txt').trim().replace(/\n/g, ', ')}\n`,
  );
  return undefined;
}

describe.skipIf(!TOOLS.every(shouldRun) && !REUSE)('node agent on Soft-RoCE in a qemu guest', () => {
  beforeAll(async () => {
    if (REUSE) out = REUSE;
    else skipped = await bootGuest();
    if (skipped) process.stderr.write(`\n!!! SKIPPING the soft-RoCE tests: ${skipped} !!!\n\n`);
    else expect(fs.existsSync(path.join(out, 'done')), `guest.sh did not finish: ${out}/guest.log`).toBe(true);
  }, SETUP_TIMEOUT_MS);
  afterAll(() => {
    if (made) fs.rmSync(made, { recursive: true, force: true });
  });

  it('the guest ran every step', (ctx) => {
    if (skipped) return ctx.skip();
    const notes = fs.existsSync(path.join(out, 'notes.txt')) ? read('notes.txt') : '';
    expect(notes.split('\n').filter((l) => l !== '' && !/ rc=0$/.test(l))).toEqual([]);
    expect(notes).toContain('client rc=0');
    expect(read('kernel.txt')).toMatch(/-amd64$/m);
  });

  it("the running agent reads the guest's fd tables with the native reader, on Debian's own kernel", (ctx) => {
    if (skipped) return ctx.skip();
    const said = read('daemon.log')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { fd_reader?: string; reason?: string })
      .filter((l) => l.fd_reader !== undefined);
    expect(said).toEqual([expect.objectContaining({ fd_reader: 'native' })]);
  });

  it('joins uverbs fds to HCAs by the real device numbers: sysfs decimal 231:192, stat the same pair', (ctx) => {
    if (skipped) return ctx.skip();
    const uverbs = read('uverbs.txt')
      .trim()
      .split('\n')
      .map((l) => l.split(' ') as [string, string, string, string]);
    expect(uverbs.map(([u, ibdev]) => [u, ibdev])).toEqual(RXE.map((d, i) => [`uverbs${i}`, d]));
    const hexPair = (hex: string) =>
      hex
        .split(':')
        .map((h) => parseInt(h, 16))
        .join(':');
    for (const [, , dec, hex] of uverbs) expect(hexPair(hex)).toBe(dec);
    expect(uverbs[0]?.[2]).toBe('231:192');
    // Each holder's fd: stat of /proc/<pid>/fd/N gives the uverbs device's own number.
    const byUverbs = new Map(uverbs.map(([u, , dec]) => [u, dec]));
    for (const line of read('holder-fds.txt').trim().split('\n')) {
      const [, , , link, rdev] = line.split(' ') as [string, string, string, string, string];
      expect(hexPair(rdev)).toBe(byUverbs.get(path.basename(link)));
    }
    // The agent, as root, found every holder by its fd and named the HCA behind it.
    const p = pids();
    const ports = new Map(explain('explain-root.s2.json').ports.map((r) => [r.device, r]));
    const jobHolders = (d: string) => ports.get(d)?.jobs.map((j) => [j.jobId, j.holders.map((h) => h.pid), j.evidence]);
    expect(jobHolders('rxe0')).toEqual([['101', [p['job101-holder']], ['fd', 'rdma-cgroup']]]);
    expect(jobHolders('rxe1')).toEqual([
      ['102', [p['job102-server']], ['fd', 'rdma-cgroup']],
      ['103', [p['job103-server']], ['fd', 'rdma-cgroup']],
    ]);
    expect(ports.get('rxe2')?.nonJob).toEqual([
      {
        pid: p['storage-server'],
        comm: 'ibv_rc_pingpong',
        paths: ['/dev/infiniband/uverbs2'],
        evidence: ['fd', 'rdma-cgroup'],
      },
    ]);
    expect(ports.get('rxe3')?.jobs).toEqual([]);
    expect(ports.get('rxe3')?.nonJob).toEqual([]);
  });

  it('sole, shared, nonjob and idle: as root, unprivileged, and in the running agent', (ctx) => {
    if (skipped) return ctx.skip();
    for (const f of ['once-root.s1.prom', 'once-root.s2.prom', 'once-nobody.s2.prom', 'daemon.s1.prom'])
      expect([f, statuses(prom(f))]).toEqual([f, VERDICTS]);
    const s = prom('once-root.s2.prom');
    expect(valueOf(s, 'ib_slurm_job_device_attributed', { job_id: '101', device: 'rxe0' })).toBe(1);
    expect(valueOf(s, 'ib_slurm_job_device_attributed', { job_id: '102', device: 'rxe1' })).toBe(0);
    expect(valueOf(s, 'ib_slurm_device_jobs', { device: 'rxe1', port: '1' })).toBe(2);
    expect(select(s, 'ib_slurm_job_counters_total').every((x) => x.labels.job_id === '101')).toBe(true);
    expect(valueOf(s, 'ib_slurm_cgroup_layout_info', {})).toBe(1);
  });

  it('device series equal sysfs hw_counters (no counters/, no bytes, lifespan left out)', (ctx) => {
    if (skipped) return ctx.skip();
    for (const phase of ['s1', 's2']) {
      const before = hw(`hw.${phase}.before`);
      // Nothing moved the counters while the agent read them: the values to compare are fixed.
      expect(hw(`hw.${phase}.after`)).toEqual(before);
      const s = prom(`once-root.${phase}.prom`);
      for (const d of RXE) {
        const files = new Map(before.get(d));
        expect(files.get('lifespan')).toBeDefined();
        files.delete('lifespan');
        const series = new Map(
          select(s, 'ib_slurm_device_counters_total', { device: d, port: '1' }).map((x) => [x.labels.counter, x.value]),
        );
        expect([phase, d, series]).toEqual([phase, d, files]);
      }
      expect(select(s, 'ib_slurm_device_transmit_bytes_total')).toEqual([]);
      expect(select(s, 'ib_slurm_device_receive_bytes_total')).toEqual([]);
    }
  });

  it('counters move with the traffic, on rxe0 only, and the running agent credits them to job 101', (ctx) => {
    if (skipped) return ctx.skip();
    const s1 = prom('once-root.s1.prom');
    const s2 = prom('once-root.s2.prom');
    for (const counter of ['sent_pkts', 'rcvd_pkts', 'rdma_sends', 'rdma_recvs'])
      expect(deviceCounter(s2, 'rxe0', counter)).toBeGreaterThan(deviceCounter(s1, 'rxe0', counter) ?? Infinity);
    // guest.sh's ROUNDS round trips: each side posts as many sends and receives, on one device.
    expect((deviceCounter(s2, 'rxe0', 'rdma_sends') ?? 0) - (deviceCounter(s1, 'rxe0', 'rdma_sends') ?? 0)).toBe(
      2 * ROUNDS,
    );
    for (const d of ['rxe1', 'rxe2', 'rxe3'])
      expect(deviceCounter(s2, d, 'sent_pkts')).toBe(deviceCounter(s1, d, 'sent_pkts'));
    // The daemon saw job 101 sole before, during and after the traffic: the job's series moved
    // by what the port counted (at most; a cycle caught in a race would credit less, never more).
    const d = prom('daemon.traffic.prom');
    for (const counter of ['sent_pkts', 'rdma_sends']) {
      const job = valueOf(d, 'ib_slurm_job_counters_total', { job_id: '101', device: 'rxe0', counter }) ?? 0;
      expect(job).toBeGreaterThan(0);
      expect(job).toBeLessThanOrEqual(deviceCounter(d, 'rxe0', counter) ?? 0);
    }
  });

  it("the kernel's list of verbs contexts names each holder's HCA; from another PID namespace it hides them, and the totals still count them", (ctx) => {
    if (skipped) return ctx.skip();
    const p = pids();
    const seen = parseContexts(read('rdma/resource-ctx.s1.json'), read('rdma/resource.s1.json'));
    if (!seen.ok) throw new Error(seen.detail);
    expect(seen.value.hidden).toEqual(new Set());
    const held = (name: string) => contextsOf(seen.value, p[name] as number, () => undefined);
    expect(held('job101-holder')).toEqual({ held: ['rxe0'], unknownOn: [] });
    expect(held('job102-server')).toEqual({ held: ['rxe1'], unknownOn: [] });
    expect(held('storage-server')).toEqual({ held: ['rxe2'], unknownOn: [] });
    const hiddenFrom = parseContexts(read('rdma/resource-ctx.pidns.json'), read('rdma/resource.pidns.json'));
    if (!hiddenFrom.ok) throw new Error(hiddenFrom.detail);
    expect(hiddenFrom.value.byPid.size).toBe(0);
    expect(hiddenFrom.value.hidden).toEqual(new Set(['rxe0', 'rxe1', 'rxe2']));
    // Unprivileged, every fd table is closed; the list still clears every process it names none for.
    const e = explain('explain-nobody.s2.json');
    const pid1 = e.unreadable.find((u) => u.pid === 1);
    expect(pid1).toMatchObject({ effect: 'cleared', contexts: { held: [], unknownOn: [] } });
  });

  it('rdma.current charges attribute holders whose fd tables are closed to the agent, and read 0 once they end', (ctx) => {
    if (skipped) return ctx.skip();
    const p = pids();
    const e = explain('explain-nobody.s2.json');
    const u = new Map(e.unreadable.map((x) => [x.pid, x]));
    expect(u.get(p['job101-holder'] as number)).toMatchObject({
      errno: 'EACCES',
      scope: 'job',
      job: '101',
      effect: 'charged',
      rdma: { charged: ['rxe0'] },
    });
    expect(u.get(p['storage-server'] as number)).toMatchObject({
      scope: 'outside',
      effect: 'charged',
      rdma: { charged: ['rxe2'] },
    });
    const ports = new Map(e.ports.map((r) => [r.device, r]));
    expect(ports.get('rxe0')?.status).toBe('sole');
    // Both kernel sources agree: the rdma cgroup's charges and the kernel's list of verbs contexts.
    expect(ports.get('rxe0')?.jobs.map((j) => [j.jobId, j.evidence])).toEqual([
      ['101', ['rdma-cgroup', 'rdma-context']],
    ]);
    expect(ports.get('rxe2')?.nonJob.map((h) => [h.pid, h.evidence])).toEqual([
      [p['storage-server'], ['rdma-cgroup', 'rdma-context']],
    ]);
    // The kernel's charges as the agent exports them: one context and four objects (PD, MR, CQ,
    // QP) while job 101's holder lives; three contexts during the traffic; zeros after.
    expect(read('rdma-current.traffic.txt')).toMatch(/job_101\nrxe0 hca_handle=3 hca_object=12 /);
    const s2 = prom('once-nobody.s2.prom');
    expect(valueOf(s2, 'ib_slurm_job_rdma_handles', { job_id: '101', device: 'rxe0' })).toBe(1);
    expect(valueOf(s2, 'ib_slurm_job_rdma_objects', { job_id: '101', device: 'rxe0' })).toBe(4);
    expect(read('rdma-current.s3.txt')).toMatch(/job_101\nrxe0 hca_handle=0 hca_object=0 /);
    const s3 = prom('once-nobody.s3.prom');
    expect(valueOf(s3, 'ib_slurm_job_rdma_handles', { job_id: '101', device: 'rxe0' })).toBe(0);
    expect(valueOf(s3, 'ib_slurm_job_rdma_objects', { job_id: '101', device: 'rxe0' })).toBe(0);
    expect(statuses(s3)).toEqual({ ...VERDICTS, rxe0: 'idle' });
  });

  it('rdma -j resource show qp of the real kernel: pid and comm per QP, kernel QPs without pid', (ctx) => {
    if (skipped) return ctx.skip();
    const p = pids();
    const text = read('rdma/resource-qp.traffic.json');
    const raw = JSON.parse(text) as { ifname: string; pid?: number; comm: string; type: string; state: string }[];
    const onRxe0 = raw.filter((q) => q.ifname === 'rxe0' && q.pid !== undefined);
    expect(onRxe0.map((q) => [q.pid, q.comm])).toEqual(
      [p['job101-holder'], p['job101-server'], p['job101-client']].map((pid) => [pid, 'ibv_rc_pingpong']),
    );
    expect(raw.filter((q) => q.type === 'GSI').map((q) => [q.ifname, q.pid, q.comm])).toEqual(
      RXE.map((d) => [d, undefined, 'ib_core']),
    );
    const parsed = parseQpResources(text);
    expect(parsed.ok).toBe(true);
    if (!parsed.ok) return;
    expect(parsed.value.filter((q) => q.pid !== undefined).map((q) => [q.device, q.pid])).toEqual(
      raw.filter((q) => q.pid !== undefined).map((q) => [q.ifname, q.pid]),
    );
  });

  it('per-PID QP counters: the mode is taken, no counter ever appears, and the agent says so (never zeros)', (ctx) => {
    if (skipped) return ctx.skip();
    expect(read('rdma/statistic-qp-mode.txt').trim().split('\n')).toEqual(
      RXE.map((d) => expect.stringMatching(new RegExp(`^link ${d}/1 mode qp auto type,pid on`))),
    );
    expect(JSON.parse(read('rdma/statistic-qp.traffic.json'))).toEqual([]);
    const d = prom('daemon.s1.prom');
    for (const [job, device] of [
      ['101', 'rxe0'],
      ['102', 'rxe1'],
      ['103', 'rxe1'],
    ] as const) {
      expect(valueOf(d, 'ib_slurm_job_qps', { job_id: job, device })).toBe(1);
      expect(valueOf(d, 'ib_slurm_job_qp_counted', { job_id: job, device })).toBe(0);
    }
    expect(select(d, 'ib_slurm_job_qp_counters_total')).toEqual([]);
    expect(select(prom('daemon.traffic.prom'), 'ib_slurm_job_qp_counters_total')).toEqual([]);
    const log = read('daemon.log')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { level: string; msg: string; link?: string; mode?: string });
    const said = log.filter((l) => /per-job QP counters unavailable/.test(l.msg));
    expect(said.map((l) => [l.link, l.mode, l.level])).toEqual(
      ['rxe0/1', 'rxe1/1', 'rxe2/1'].map((link) => [link, 'qp auto type,pid on', 'warn']),
    );
    // At its stop the agent turned off exactly what it had turned on.
    expect(read('rdma/statistic-qp-mode.after-daemon.txt').trim().split('\n')).toEqual(
      RXE.map((dev) => expect.stringMatching(new RegExp(`^link ${dev}/1 mode qp auto off`))),
    );
  });
  it('job usage under cgroup v2 with the memory and cpuset controllers: the agent reads what the files say', (ctx) => {
    if (skipped) return ctx.skip();
    /** `== <file>` sections of usage-files.*.txt → file → its text. */
    const files = (name: string): Map<string, string> =>
      new Map(
        read(name)
          .split(/^== /m)
          .filter((p) => p !== '')
          .map((p) => [p.slice(0, p.indexOf('\n')), p.slice(p.indexOf('\n') + 1).trim()]),
      );
    const before = files('usage-files.before.txt');
    const after = files('usage-files.after.txt');
    const keyed = (text: string | undefined, key: string): number =>
      Number(new RegExp(`^${key} (\\d+)$`, 'm').exec(text ?? '')?.[1] ?? NaN);
    const s = prom('once-root.usage.prom');
    const job = { job_id: '42' };
    // The task that touched 100 MiB under a 32 MiB limit was killed (SIGKILL: 128 + 9).
    expect(read('usage-oom-rc.txt').trim()).toBe('137');
    const kills = keyed(before.get('memory.events'), 'oom_kill');
    expect(kills).toBeGreaterThanOrEqual(1);
    expect(keyed(after.get('memory.events'), 'oom_kill')).toBe(kills);
    expect(valueOf(s, 'ib_slurm_job_oom_kills_total', job)).toBe(kills);
    expect(valueOf(s, 'ib_slurm_job_memory_limit_bytes', job)).toBe(32 * 2 ** 20);
    expect(Number(before.get('memory.max'))).toBe(32 * 2 ** 20);
    // The peak is the limit the killed task reached, and stays there while the holder holds less.
    const peak = Number(before.get('memory.peak'));
    expect(Number(after.get('memory.peak'))).toBe(peak);
    expect(valueOf(s, 'ib_slurm_job_memory_peak_bytes', job)).toBe(peak);
    expect(peak).toBeGreaterThan(30 * 2 ** 20);
    // Memory in use moves by a few pages between the readings: the agent's is between them, give or take 1 MiB.
    const used = valueOf(s, 'ib_slurm_job_memory_used_bytes', job) ?? NaN;
    const [lo, hi] = [Number(before.get('memory.current')), Number(after.get('memory.current'))].sort((a, b) => a - b);
    expect(used).toBeGreaterThanOrEqual((lo as number) - 2 ** 20);
    expect(used).toBeLessThanOrEqual((hi as number) + 2 ** 20);
    expect(used).toBeGreaterThanOrEqual(16 * 2 ** 20);
    // Its own cpuset (CPU 0) is set: one CPU allocated.
    expect(before.get('cpuset.cpus')).toBe('0');
    expect(before.get('cpuset.cpus.effective')).toBe('0');
    expect(valueOf(s, 'ib_slurm_job_cpus_allocated', job)).toBe(1);
    // The other jobs' cpusets are not set (only inherited): no allocation is made up for them.
    expect(select(s, 'ib_slurm_job_cpus_allocated').map((x) => x.labels.job_id)).toEqual(['42']);
    // CPU time: the agent's reading lies between the two readings of cpu.stat.
    const cpu =
      (valueOf(s, 'ib_slurm_job_cpu_user_seconds_total', job) ?? NaN) +
      (valueOf(s, 'ib_slurm_job_cpu_system_seconds_total', job) ?? NaN);
    const usec = (m: Map<string, string>): number =>
      keyed(m.get('cpu.stat'), 'user_usec') + keyed(m.get('cpu.stat'), 'system_usec');
    expect(cpu).toBeGreaterThanOrEqual(usec(before) / 1e6 - 1e-6);
    expect(cpu).toBeLessThanOrEqual(usec(after) / 1e6 + 1e-6);
  });
});
