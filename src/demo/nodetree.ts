/**
 * Synthetic node trees: sysfs (HCAs, counters, uverbs), procfs (stat,
 * cmdline, fd links, stand-in NVIDIA GPUs) and a cgroup tree in any Slurm layout. Used by the demo,
 * the tests and the benchmarks, so all three exercise the same shapes.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { FdDeviceOf, Roots } from '../node/read/roots.js';

export type TreeLayout = 'v1' | 'v2' | 'v2-sluid';

export interface PortSpec {
  readonly linkLayer: 'InfiniBand' | 'Ethernet';
  readonly rate: string;
  readonly state?: string;
  readonly counters: Readonly<Record<string, string | number | bigint>>;
  readonly hwCounters?: Readonly<Record<string, string | number | bigint>>;
}

export interface HcaSpec {
  readonly name: string;
  /** The uverbs index that maps to this HCA (independent of the HCA's own number). */
  readonly uverbs: number;
  /** Its device number, `uverbsN/dev` (default: the kernel's, 231:192 + N). */
  readonly dev?: string;
  readonly boardId?: string;
  readonly firmware?: string;
  readonly hcaType?: string;
  readonly ports: readonly PortSpec[];
}

export interface ProcSpec {
  readonly pid: number;
  readonly comm: string;
  /** uverbs indexes this process holds fds on. */
  readonly uverbs?: readonly number[];
  /** More fds after the uverbs ones: a link text and, for a character device, its number. */
  readonly links?: readonly LinkSpec[];
  /** Total fds, uverbs ones and links included (the rest are sockets, pipes, files). */
  readonly fds?: number;
  readonly cmdline?: string;
  readonly startTime?: number;
  /** Content of /proc/<pid>/cgroup; a systemd service of its own when absent (job processes get their job's). */
  readonly cgroup?: string;
  /** rdma.current of its own cgroup (the v1 rdma line, else the v2 line of /proc/<pid>/cgroup). */
  readonly rdma?: RdmaSpec;
}

/** An fd as /proc shows it: the link text, and the device number when it is a character device. */
export interface LinkSpec {
  readonly target: string;
  readonly dev?: string;
}

/** The kernel's number of uverbsN (major 231, minors from 192) when fewer than 32 exist. */
export function uverbsDevice(n: number): string {
  return `231:${192 + n}`;
}

/** Link texts a synthetic tree's fds have and what they are: /dev/null and every /dev/infiniband/uverbsN. */
function standardDevices(): Map<string, string> {
  const out = new Map([['/dev/null', '1:3']]);
  for (let n = 0; n < 64; n++) out.set(`/dev/infiniband/uverbs${n}`, uverbsDevice(n));
  return out;
}

/** The fd device source of processes written with `writeProcess` and no `links`: the standard devices. */
export const standardFdDevice: FdDeviceOf = (() => {
  const table = standardDevices();
  return (_fdPath: string, linkText: string) => table.get(linkText);
})();

/**
 * A synthetic tree's roots. Its procfs holds plain symlinks whose targets do not exist, so stat
 * cannot tell their device numbers: `devices` lists them (link text → `major:minor`) and
 * `fdDevice` answers from that list for the agent run in the same process.
 */
export interface TreeRoots extends Roots {
  readonly fdDevice: FdDeviceOf;
  readonly devices: ReadonlyMap<string, string>;
}

/**
 * An rdma.current: charges by device (every HCA of the tree is listed, zeros
 * included, as the kernel does), or the raw file content.
 */
export type RdmaSpec =
  Readonly<Record<string, { readonly handles: number; readonly objects: number }>> | { readonly raw: string };

export interface StepSpec {
  readonly name: string;
  readonly tasks: readonly ProcSpec[];
  /** The step's slurmstepd (v2: in step_<S>/slurm); its title carries the job id. */
  readonly stepd?: ProcSpec;
}

export interface JobSpec {
  readonly jobId: string;
  /** 26.05 SLUID; the v2-sluid layout names the job directory after it. */
  readonly sluid?: string;
  readonly uid: number;
  readonly steps: readonly StepSpec[];
  /** rdma.current of the job cgroup (v2 job directory; v1 under the rdma hierarchy). */
  readonly rdma?: RdmaSpec;
  /** CPU and memory use in the job cgroup's files (v2 job directory; v1 memory and cpu,cpuacct). */
  readonly usage?: JobUsageSpec;
}

/** A job's CPU and memory use as the kernel's cgroup files give it. */
export interface JobUsageSpec {
  readonly cpuUserSeconds: number;
  readonly cpuSystemSeconds: number;
  readonly memoryBytes: number;
  readonly memoryPeakBytes: number;
  /** Absent: no limit ("max", or v1's huge value). */
  readonly memoryLimitBytes?: number;
  readonly oomKills?: number;
  readonly throttledPeriods?: number;
  readonly throttledSeconds?: number;
  /** The job's cpuset as a kernel CPU list (Slurm's ConstrainCores=yes); absent: none of its own. */
  readonly cpus?: string;
}

export interface TreeSpec {
  readonly layout: TreeLayout;
  readonly hcas: readonly HcaSpec[];
  readonly jobs: readonly JobSpec[];
  /** Processes outside every job (daemons, storage clients, the stepd "infinity" process). */
  readonly others: readonly ProcSpec[];
  /** v2 slice path and scope name. */
  readonly slice?: string;
  readonly scope?: string;
  /**
   * The rdma controller enabled everywhere: every cgroup of a job process (and, in v2 trees, of
   * every other process but PID 1, which stays in the root cgroup) has an rdma.current charged
   * as the process's uverbs fds say, and each job directory the sum of its processes.
   */
  readonly rdmaEverywhere?: boolean;
  /** Stand-in NVIDIA GPUs: a synthetic /proc/driver/nvidia and /proc/devices. */
  readonly nvidia?: NvidiaSpec;
  /** Where the GPUs and HCAs sit in the PCI tree (sysfs devices/pci…, bus/pci/devices, numa_node). */
  readonly pci?: PciSpec;
}

/**
 * A PCI tree as sysfs shows it. Paths are under /sys/devices, root complex first, one directory per
 * PCI function on the way down: `pci0000:56/0000:56:02.0/0000:57:00.0/…/0000:5b:00.0`.
 */
export interface PciSpec {
  /** Each endpoint's path; the bridges on the way are made too. */
  readonly devices: readonly string[];
  /** NUMA node by root complex (`pci0000:56`); its functions read it; -1 (unknown) for one not listed. */
  readonly numa: Readonly<Record<string, number>>;
  /** HCA name → the bus id of its PCI function (one of `devices`): class/infiniband/<hca>/device. */
  readonly hcas: Readonly<Record<string, string>>;
}

export function rootsUnder(dir: string): Roots {
  return { sysfs: path.join(dir, 'sys'), procfs: path.join(dir, 'proc'), cgroupfs: path.join(dir, 'cgroup') };
}

/**
 * The device numbers of the tree's fd link texts: the standard ones, each HCA's own number for its
 * uverbs path, and every process's links. One link text names one device in a tree.
 */
function treeDevices(spec: TreeSpec): Map<string, string> {
  const table = standardDevices();
  const set = (target: string, dev: string | undefined): void => {
    if (dev === undefined) return void table.delete(target);
    const known = table.get(target);
    if (known !== undefined && known !== dev && !target.startsWith('/dev/infiniband/uverbs'))
      throw new Error(`${target}: two device numbers (${known}, ${dev}) in one tree`);
    table.set(target, dev);
  };
  for (const hca of spec.hcas) set(`/dev/infiniband/uverbs${hca.uverbs}`, hca.dev ?? uverbsDevice(hca.uverbs));
  for (const [target, dev] of spec.nvidia ? nvidiaDevices(spec.nvidia) : []) set(target, dev);
  for (const p of allProcs(spec)) for (const l of p.links ?? []) set(l.target, l.dev);
  return table;
}

function allProcs(spec: TreeSpec): ProcSpec[] {
  return [...spec.others, ...spec.jobs.flatMap(jobProcs)];
}

/** Writes the whole tree under `dir` (which must be empty or absent). */
export function writeTree(dir: string, spec: TreeSpec): TreeRoots {
  const roots = rootsUnder(dir);
  for (const hca of spec.hcas) writeHca(roots.sysfs, hca);
  if (spec.pci) writePci(roots.sysfs, spec.pci);
  for (const job of spec.jobs) {
    for (const step of job.steps) {
      const rdma = hasRdma(spec);
      step.tasks.forEach((t, i) =>
        writeProcess(roots.procfs, { cgroup: jobCgroup(spec, job, step.name, `task_${i}`, rdma), ...t }),
      );
      if (step.stepd)
        writeProcess(roots.procfs, { cgroup: jobCgroup(spec, job, step.name, undefined, rdma), ...step.stepd });
    }
  }
  for (const p of spec.others)
    writeProcess(roots.procfs, spec.rdmaEverywhere && p.pid === 1 && !p.cgroup ? { ...p, cgroup: '0::/\n' } : p);
  writeCgroups(roots.cgroupfs, spec);
  writeRdma(roots, spec);
  if (spec.nvidia) writeNvidia(roots.procfs, spec.nvidia);
  const devices = treeDevices(spec);
  return { ...roots, fdDevice: (_fdPath, linkText) => devices.get(linkText), devices };
}

/** Whether the tree has an rdma controller (then v1 trees get an rdma hierarchy). */
function hasRdma(spec: TreeSpec): boolean {
  const procs = [
    ...spec.others,
    ...spec.jobs.flatMap((j) => j.steps.flatMap((s) => [...s.tasks, ...(s.stepd ? [s.stepd] : [])])),
  ];
  return spec.rdmaEverywhere === true || spec.jobs.some((j) => j.rdma) || procs.some((p) => p.rdma);
}

type Charges = Record<string, { handles: number; objects: number }>;

/** One verbs context and ten objects per device the process has an fd on. */
function chargesFromFds(spec: TreeSpec, p: ProcSpec): Charges {
  const out: Charges = {};
  for (const u of p.uverbs ?? []) {
    const hca = spec.hcas.find((h) => h.uverbs === u);
    if (hca)
      out[hca.name] = { handles: (out[hca.name]?.handles ?? 0) + 1, objects: (out[hca.name]?.objects ?? 0) + 10 };
  }
  return out;
}

function jobProcs(job: JobSpec): ProcSpec[] {
  return job.steps.flatMap((s) => [...s.tasks, ...(s.stepd ? [s.stepd] : [])]);
}

function sumCharges(list: readonly Charges[]): Charges {
  const out: Charges = {};
  for (const c of list)
    for (const [d, v] of Object.entries(c))
      out[d] = { handles: (out[d]?.handles ?? 0) + v.handles, objects: (out[d]?.objects ?? 0) + v.objects };
  return out;
}

export function rdmaCurrentText(spec: RdmaSpec, devices: readonly string[]): string {
  if ('raw' in spec && typeof spec.raw === 'string') return spec.raw;
  const charges = spec as Readonly<Record<string, { handles: number; objects: number }>>;
  const names = [...new Set([...devices, ...Object.keys(charges)])];
  return names
    .map((d) => `${d} hca_handle=${charges[d]?.handles ?? 0} hca_object=${charges[d]?.objects ?? 0} \n`)
    .join('');
}

function writeRdma(roots: Roots, spec: TreeSpec): void {
  const devices = spec.hcas.map((h) => h.name);
  const everywhere = spec.rdmaEverywhere === true;
  const own = (p: ProcSpec): RdmaSpec | undefined => p.rdma ?? (everywhere ? chargesFromFds(spec, p) : undefined);
  for (const job of spec.jobs) {
    const charges =
      job.rdma ?? (everywhere ? sumCharges(jobProcs(job).map((p) => chargesFromFds(spec, p))) : undefined);
    if (!charges) continue;
    const dir =
      spec.layout === 'v1'
        ? path.join(roots.cgroupfs, 'rdma', 'slurm', `uid_${job.uid}`, `job_${job.jobId}`)
        : path.join(scopeDir(roots.cgroupfs, spec), jobDirName(job, spec.layout));
    put(path.join(dir, 'rdma.current'), rdmaCurrentText(charges, devices));
  }
  // In v1 trees the processes outside the jobs sit in the rdma hierarchy's root: no file of their own.
  const others = spec.layout === 'v1' ? spec.others.filter((p) => p.rdma) : spec.others;
  for (const p of [...others, ...spec.jobs.flatMap(jobProcs)]) {
    const charges = own(p);
    const dir = charges && ownCgroupDir(roots, p.pid);
    if (charges && dir !== undefined) put(path.join(dir, 'rdma.current'), rdmaCurrentText(charges, devices));
  }
}

/** A process's own rdma cgroup directory, from the /proc/<pid>/cgroup already written. */
function ownCgroupDir(roots: Roots, pid: number): string | undefined {
  const text = fs.readFileSync(path.join(roots.procfs, String(pid), 'cgroup'), 'utf8');
  const lines = text
    .split('\n')
    .map((l) => /^\d+:([^:]*):(.*)$/.exec(l))
    .filter((m): m is RegExpExecArray => m !== null);
  const v1 = lines.find((m) => (m[1] as string).split(',').includes('rdma'));
  if (v1) return path.join(roots.cgroupfs, v1[1] as string, v1[2] as string);
  const v2 = lines.find((m) => m[1] === '');
  return v2 && v2[2] !== '/' ? path.join(roots.cgroupfs, v2[2] as string) : undefined;
}

function scopeDir(cgroupfs: string, spec: TreeSpec): string {
  return path.join(cgroupfs, spec.slice ?? 'system.slice', spec.scope ?? 'slurmstepd.scope');
}

function put(file: string, content: string): void {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, content);
}

export function writeHca(sysfs: string, hca: HcaSpec): void {
  const dev = path.join(sysfs, 'class', 'infiniband', hca.name);
  put(path.join(dev, 'board_id'), `${hca.boardId ?? 'MT_0000000223'}\n`);
  put(path.join(dev, 'fw_ver'), `${hca.firmware ?? '28.39.1002'}\n`);
  put(path.join(dev, 'hca_type'), `${hca.hcaType ?? 'MT4129'}\n`);
  put(path.join(dev, 'node_guid'), '0c42:a103:0001:0001\n');
  hca.ports.forEach((p, i) => writePort(sysfs, hca.name, i + 1, p));
  const verbs = path.join(sysfs, 'class', 'infiniband_verbs', `uverbs${hca.uverbs}`);
  put(path.join(verbs, 'ibdev'), `${hca.name}\n`);
  put(path.join(verbs, 'dev'), `${hca.dev ?? uverbsDevice(hca.uverbs)}\n`);
}

/**
 * Writes a PCI tree: a directory per function with its `numa_node`, `bus/pci/devices/<bus id>` links
 * into it, and each HCA's `device` link, all relative as the kernel makes them.
 */
export function writePci(sysfs: string, spec: PciSpec): void {
  const devices = path.join(sysfs, 'devices');
  const pathOf = new Map<string, string>();
  for (const device of spec.devices) {
    const parts = device.split('/');
    const numa = spec.numa[parts[0] as string] ?? -1;
    for (let i = 2; i <= parts.length; i++) {
      const rel = parts.slice(0, i).join('/');
      const busId = parts[i - 1] as string;
      if (pathOf.has(busId)) continue;
      pathOf.set(busId, rel);
      put(path.join(devices, rel, 'numa_node'), `${numa}\n`);
      link(path.join(sysfs, 'bus', 'pci', 'devices', busId), path.join(devices, rel));
    }
  }
  for (const [hca, busId] of Object.entries(spec.hcas)) {
    const rel = pathOf.get(busId);
    if (rel === undefined) throw new Error(`${hca}: ${busId} is not in the PCI tree`);
    link(path.join(sysfs, 'class', 'infiniband', hca, 'device'), path.join(devices, rel));
  }
}

/** A relative symlink at `at` to `target`, its directory made. */
function link(at: string, target: string): void {
  fs.mkdirSync(path.dirname(at), { recursive: true });
  fs.symlinkSync(path.relative(path.dirname(at), target), at);
}

function writePort(sysfs: string, device: string, n: number, p: PortSpec): void {
  const dir = path.join(sysfs, 'class', 'infiniband', device, 'ports', String(n));
  put(path.join(dir, 'state'), `${p.state ?? '4: ACTIVE'}\n`);
  put(path.join(dir, 'phys_state'), `${p.state?.includes('DOWN') ? '3: Disabled' : '5: LinkUp'}\n`);
  put(path.join(dir, 'rate'), `${p.rate}\n`);
  put(path.join(dir, 'link_layer'), `${p.linkLayer}\n`);
  writeCounters(sysfs, device, n, p.counters, 'counters');
  if (p.hwCounters) writeCounters(sysfs, device, n, p.hwCounters, 'hw_counters');
}

export function writeCounters(
  sysfs: string,
  device: string,
  port: number,
  values: Readonly<Record<string, string | number | bigint>>,
  group: 'counters' | 'hw_counters',
): void {
  const dir = path.join(sysfs, 'class', 'infiniband', device, 'ports', String(port), group);
  fs.mkdirSync(dir, { recursive: true });
  for (const [name, v] of Object.entries(values)) fs.writeFileSync(path.join(dir, name), `${v}\n`);
}

export function writeProcess(procfs: string, p: ProcSpec): void {
  const dir = path.join(procfs, String(p.pid));
  const start = p.startTime ?? 1000 + p.pid;
  // Fields 3..52 after "(comm)"; field 22 is the start time in clock ticks.
  const rest = Array.from({ length: 50 }, (_, i) => (i === 0 ? 'S' : i === 19 ? String(start) : '0'));
  put(path.join(dir, 'stat'), `${p.pid} (${p.comm}) ${rest.join(' ')}\n`);
  put(path.join(dir, 'cmdline'), `${p.cmdline ?? p.comm}\0`);
  put(path.join(dir, 'comm'), `${p.comm}\n`);
  put(path.join(dir, 'cgroup'), p.cgroup ?? `0::/system.slice/${p.comm}.service\n`);
  const fdDir = path.join(dir, 'fd');
  fs.mkdirSync(fdDir, { recursive: true });
  const named = [...(p.uverbs ?? []).map((n) => `/dev/infiniband/uverbs${n}`), ...(p.links ?? []).map((l) => l.target)];
  const total = Math.max(p.fds ?? 3 + named.length, 3 + named.length);
  const infoDir = path.join(dir, 'fdinfo');
  fs.mkdirSync(infoDir, { recursive: true });
  put(path.join(dir, 'mountinfo'), MOUNTINFO);
  for (let fd = 0; fd < total; fd++) {
    const target = fd < 3 ? '/dev/null' : (named[fd - 3] ?? `socket:[${p.pid * 1000 + fd}]`);
    fs.symlinkSync(target, path.join(fdDir, String(fd)));
    if (target.startsWith('/')) fs.writeFileSync(path.join(infoDir, String(fd)), fdInfo(target));
  }
}

/** Mount ids of the synthetic mountinfo: /dev (devtmpfs) and the root filesystem (ext4). */
const DEV_MOUNT = 24;
const ROOT_MOUNT = 28;

/** /proc/<pid>/mountinfo of every synthetic process: one mount namespace, as on a plain node. */
const MOUNTINFO = [
  `${ROOT_MOUNT} 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw,errors=remount-ro`,
  `22 ${ROOT_MOUNT} 0:21 / /sys rw,nosuid,nodev,noexec,relatime shared:7 - sysfs sysfs rw`,
  `23 ${ROOT_MOUNT} 0:22 / /proc rw,nosuid,nodev,noexec,relatime shared:12 - proc proc rw`,
  `${DEV_MOUNT} ${ROOT_MOUNT} 0:5 / /dev rw,nosuid,relatime shared:2 - devtmpfs udev rw,mode=755`,
  `25 ${DEV_MOUNT} 0:23 / /dev/pts rw,nosuid,noexec,relatime shared:3 - devpts devpts rw,mode=620`,
  '',
].join('\n');

/**
 * /proc/<pid>/fdinfo/<fd> of an fd on a path (what the agent reads before it asks a file's type):
 * a path under /dev is on the devtmpfs, any other on the root filesystem. Written only for the
 * fds that are paths; the kernel has one for every fd, but none other is ever read.
 */
function fdInfo(target: string): string {
  const mount = target.startsWith('/dev/') ? DEV_MOUNT : ROOT_MOUNT;
  return `pos:\t0\nflags:\t02100002\nmnt_id:\t${mount}\n`;
}

function writeCgroups(cgroupfs: string, spec: TreeSpec): void {
  fs.mkdirSync(cgroupfs, { recursive: true });
  if (spec.layout === 'v1') {
    const usage = spec.jobs.some((j) => j.usage) ? ['cpu,cpuacct'] : [];
    for (const ctrl of ['freezer', 'memory', 'cpuset', ...usage, ...(hasRdma(spec) ? ['rdma'] : [])])
      for (const job of spec.jobs) writeJobV1(cgroupfs, ctrl, job);
    fs.mkdirSync(path.join(cgroupfs, 'freezer', 'slurm', 'system'), { recursive: true });
    return;
  }
  put(path.join(cgroupfs, 'cgroup.controllers'), `cpuset cpu io memory pids${hasRdma(spec) ? ' rdma' : ''}\n`);
  const scope = scopeDir(cgroupfs, spec);
  put(path.join(scope, 'system', 'cgroup.procs'), '');
  for (const job of spec.jobs) writeJobV2(scope, job, spec.layout);
}

/** /proc/<pid>/cgroup of a job process: a task's leaf, or the step's stepd cgroup when `task` is absent. */
function jobCgroup(spec: TreeSpec, job: JobSpec, step: string, task: string | undefined, rdma: boolean): string {
  if (spec.layout === 'v1') {
    const leaf = `/slurm/uid_${job.uid}/job_${job.jobId}/${step}${task ? `/${task}` : ''}`;
    return `${rdma ? `5:rdma:${leaf}\n` : ''}4:freezer:${leaf}\n0::/\n`;
  }
  const scope = `/${spec.slice ?? 'system.slice'}/${spec.scope ?? 'slurmstepd.scope'}/${jobDirName(job, spec.layout)}/${step}`;
  return `0::${scope}/${task ? `user/${task}` : 'slurm'}\n`;
}

export function jobDirName(job: JobSpec, layout: TreeLayout): string {
  return layout === 'v2-sluid' && job.sluid ? job.sluid : `job_${job.jobId}`;
}

function writeJobV2(scope: string, job: JobSpec, layout: TreeLayout): void {
  const jobDir = path.join(scope, jobDirName(job, layout));
  put(path.join(jobDir, 'cgroup.procs'), '');
  if (job.usage) writeUsageV2(jobDir, job.usage);
  for (const step of job.steps) {
    const stepDir = path.join(jobDir, step.name);
    put(path.join(stepDir, 'cgroup.procs'), '');
    put(path.join(stepDir, 'user', 'cgroup.procs'), '');
    step.tasks.forEach((t, i) => put(path.join(stepDir, 'user', `task_${i}`, 'cgroup.procs'), `${t.pid}\n`));
    put(path.join(stepDir, 'slurm', 'cgroup.procs'), step.stepd ? `${step.stepd.pid}\n` : '');
  }
}

function writeJobV1(cgroupfs: string, ctrl: string, job: JobSpec): void {
  const jobDir = path.join(cgroupfs, ctrl, 'slurm', `uid_${job.uid}`, `job_${job.jobId}`);
  put(path.join(jobDir, 'cgroup.procs'), '');
  if (job.usage) writeUsageV1(jobDir, ctrl, job.usage);
  for (const step of job.steps) {
    const stepDir = path.join(jobDir, step.name);
    // v1 keeps slurmstepd outside the step's task cgroups but inside the step.
    put(path.join(stepDir, 'cgroup.procs'), step.stepd ? `${step.stepd.pid}\n` : '');
    step.tasks.forEach((t, i) => put(path.join(stepDir, `task_${i}`, 'cgroup.procs'), `${t.pid}\n`));
  }
}

const usec = (seconds: number): number => Math.round(seconds * 1e6);
const nsec = (seconds: number): number => Math.round(seconds * 1e9);

/** A v2 job directory's cpu.stat and memory files, as the kernel writes them. */
export function writeUsageV2(jobDir: string, u: JobUsageSpec): void {
  const user = usec(u.cpuUserSeconds);
  const system = usec(u.cpuSystemSeconds);
  put(
    path.join(jobDir, 'cpu.stat'),
    `usage_usec ${user + system}\nuser_usec ${user}\nsystem_usec ${system}\nnr_periods ${u.throttledPeriods ?? 0}\n` +
      `nr_throttled ${u.throttledPeriods ?? 0}\nthrottled_usec ${usec(u.throttledSeconds ?? 0)}\n`,
  );
  put(path.join(jobDir, 'memory.current'), `${u.memoryBytes}\n`);
  put(path.join(jobDir, 'memory.peak'), `${u.memoryPeakBytes}\n`);
  put(path.join(jobDir, 'memory.max'), `${u.memoryLimitBytes ?? 'max'}\n`);
  const kills = u.oomKills ?? 0;
  put(
    path.join(jobDir, 'memory.events'),
    `low 0\nhigh 0\nmax ${kills}\noom ${kills}\noom_kill ${kills}\noom_group_kill 0\n`,
  );
  if (u.cpus !== undefined) {
    put(path.join(jobDir, 'cpuset.cpus'), `${u.cpus}\n`);
    put(path.join(jobDir, 'cpuset.cpus.effective'), `${u.cpus}\n`);
  }
}

/** Rewrites a job's usage files where its tree put them (v2 job directory, v1 memory and cpu,cpuacct). */
export function rewriteJobUsage(cgroupfs: string, spec: TreeSpec, job: JobSpec, u: JobUsageSpec): void {
  if (spec.layout !== 'v1') return writeUsageV2(path.join(scopeDir(cgroupfs, spec), jobDirName(job, spec.layout)), u);
  for (const ctrl of ['memory', 'cpu,cpuacct'])
    writeUsageV1(path.join(cgroupfs, ctrl, 'slurm', `uid_${job.uid}`, `job_${job.jobId}`), ctrl, u);
}

/** v1's unlimited memory.limit_in_bytes on x86_64 (the largest page-aligned signed 64-bit value). */
const V1_NO_LIMIT = '9223372036854771712';

/** A v1 job directory's files in the memory, cpu,cpuacct and cpuset hierarchies. */
function writeUsageV1(jobDir: string, ctrl: string, u: JobUsageSpec): void {
  if (ctrl === 'memory') {
    put(path.join(jobDir, 'memory.usage_in_bytes'), `${u.memoryBytes}\n`);
    put(path.join(jobDir, 'memory.max_usage_in_bytes'), `${u.memoryPeakBytes}\n`);
    put(path.join(jobDir, 'memory.limit_in_bytes'), `${u.memoryLimitBytes ?? V1_NO_LIMIT}\n`);
    put(path.join(jobDir, 'memory.oom_control'), `oom_kill_disable 0\nunder_oom 0\noom_kill ${u.oomKills ?? 0}\n`);
  } else if (ctrl === 'cpuset' && u.cpus !== undefined) {
    put(path.join(jobDir, 'cpuset.cpus'), `${u.cpus}\n`);
  } else if (ctrl === 'cpu,cpuacct') {
    put(path.join(jobDir, 'cpuacct.usage_user'), `${nsec(u.cpuUserSeconds)}\n`);
    put(path.join(jobDir, 'cpuacct.usage_sys'), `${nsec(u.cpuSystemSeconds)}\n`);
    put(
      path.join(jobDir, 'cpu.stat'),
      `nr_periods ${u.throttledPeriods ?? 0}\nnr_throttled ${u.throttledPeriods ?? 0}\nthrottled_time ${nsec(u.throttledSeconds ?? 0)}\n`,
    );
  }
}

/** The stepd of a job step, titled as Slurm titles it. */
export function stepd(pid: number, jobId: string, step: string): ProcSpec {
  const stepId = step.replace(/^step_/, '');
  return { pid, comm: 'slurmstepd', cmdline: `slurmstepd: [${jobId}.${stepId}]` };
}

/** A stand-in NVIDIA GPU as the driver shows it under /proc/driver/nvidia. */
export interface GpuSpec {
  /** As the driver names its directory: `0000:18:00.0`. */
  readonly busId: string;
  readonly uuid: string;
  /** Device Minor: `/dev/nvidia<minor>`, 195:<minor>. */
  readonly minor: number;
  readonly model?: string;
  readonly excluded?: boolean;
  /** MIG GPU instances and their compute instances; caps minors follow the driver's table. */
  readonly mig?: readonly { readonly gi: number; readonly cis: readonly number[] }[];
}

export interface NvidiaSpec {
  readonly gpus: readonly GpuSpec[];
  /** Dynamic majors as /proc/devices gives them; default: those of the recorded H200 node. */
  readonly majors?: Partial<typeof H200_MAJORS>;
}

/** The dynamic majors on the recorded H200 node (fixtures/node/nvidia/h200). */
export const H200_MAJORS = { uvm: 238, nvswitch: 239, nvlink: 240, caps: 241, imex: 242 };

/** nvidia-caps minors of the node-wide MIG capabilities, fixed by the driver's table. */
export const MIG_CONFIG_MINOR = 1;
export const MIG_MONITOR_MINOR = 2;

/**
 * The nvidia-caps minor the driver gives a GPU instance (`ci` absent) or a compute instance: its
 * table starts at 3 after nvlink's fabric-mgmt and MIG's config and monitor, and holds for each of
 * 32 GPU minors 15 GPU instances, each followed by its 8 compute instances.
 */
export function migCapsMinor(gpuMinor: number, gi: number, ci?: number): number {
  return 3 + gpuMinor * 15 * 9 + gi * 9 + (ci === undefined ? 0 : 1 + ci);
}

/** The information file as the driver writes it (label, tabs, value), shaped after the H200's. */
export function gpuInformationText(g: GpuSpec): string {
  const rows: [string, string][] = [
    ['Model: \t\t', g.model ?? 'NVIDIA H200'],
    ['IRQ:   \t\t', String(41 + g.minor)],
    ['GPU UUID: \t', g.uuid],
    ['Video BIOS: \t', '96.00.a5.00.1a'],
    ['Bus Type: \t', 'PCIe'],
    ['DMA Size: \t', '52 bits'],
    ['DMA Mask: \t', '0xfffffffffffff'],
    ['Bus Location: \t', g.busId],
    ['Device Minor: \t', String(g.minor)],
    ['GPU Firmware: \t', '580.159.04'],
    ['GPU Excluded:\t', g.excluded ? 'Yes' : 'No'],
  ];
  return rows.map(([label, value]) => `${label} ${value}\n`).join('');
}

/** A capability file as the driver writes it. */
export function capabilityText(minor: number, mode = 292): string {
  return `DeviceFileMinor: ${minor}\nDeviceFileMode: ${mode}\nDeviceFileModify: 1\n`;
}

/** /proc/devices with the NVIDIA drivers (and uverbs at 231) among a few ordinary ones. */
export function procDevicesText(spec: NvidiaSpec): string {
  const m = { ...H200_MAJORS, ...spec.majors };
  const chars = [
    [1, 'mem'],
    [4, 'tty'],
    [195, 'nvidia'],
    [195, 'nvidiactl'],
    [231, 'infiniband_verbs'],
    [m.uvm, 'nvidia-uvm'],
    [m.nvswitch, 'nvidia-nvswitch'],
    [m.nvlink, 'nvidia-nvlink'],
    [m.caps, 'nvidia-caps'],
    [m.imex, 'nvidia-caps-imex-channels'],
  ].sort((a, b) => (a[0] as number) - (b[0] as number));
  const line = ([n, name]: (string | number)[]): string => `${String(n).padStart(3)} ${name}\n`;
  return `Character devices:\n${chars.map(line).join('')}\nBlock devices:\n${line([8, 'sd'])}`;
}

/** Writes /proc/devices and /proc/driver/nvidia (gpus/, capabilities/) for stand-in GPUs. */
export function writeNvidia(procfs: string, spec: NvidiaSpec): void {
  put(path.join(procfs, 'devices'), procDevicesText(spec));
  const driver = path.join(procfs, 'driver', 'nvidia');
  put(path.join(driver, 'version'), 'NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04\n');
  const caps = path.join(driver, 'capabilities');
  put(path.join(caps, 'mig', 'config'), capabilityText(MIG_CONFIG_MINOR, 256));
  put(path.join(caps, 'mig', 'monitor'), capabilityText(MIG_MONITOR_MINOR));
  for (const g of spec.gpus) {
    put(path.join(driver, 'gpus', g.busId, 'information'), gpuInformationText(g));
    // The driver makes gpu<minor>/mig/ for every GPU, empty while MIG is off.
    const mig = path.join(caps, `gpu${g.minor}`, 'mig');
    fs.mkdirSync(mig, { recursive: true });
    for (const { gi, cis } of g.mig ?? []) {
      put(path.join(mig, `gi${gi}`, 'access'), capabilityText(migCapsMinor(g.minor, gi)));
      for (const ci of cis)
        put(path.join(mig, `gi${gi}`, `ci${ci}`, 'access'), capabilityText(migCapsMinor(g.minor, gi, ci)));
    }
  }
}

/** Device paths of stand-in GPUs and their numbers: what their holders' fd links name. */
export function nvidiaDevices(spec: NvidiaSpec): Map<string, string> {
  const m = { ...H200_MAJORS, ...spec.majors };
  const caps = (minor: number): [string, string] => [`/dev/nvidia-caps/nvidia-cap${minor}`, `${m.caps}:${minor}`];
  const out = new Map<string, string>([
    ['/dev/nvidiactl', '195:255'],
    ['/dev/nvidia-modeset', '195:254'],
    ['/dev/nvidia-uvm', `${m.uvm}:0`],
    ['/dev/nvidia-uvm-tools', `${m.uvm}:1`],
    caps(MIG_CONFIG_MINOR),
    caps(MIG_MONITOR_MINOR),
  ]);
  for (const g of spec.gpus) {
    out.set(`/dev/nvidia${g.minor}`, `195:${g.minor}`);
    for (const { gi, cis } of g.mig ?? []) {
      out.set(...caps(migCapsMinor(g.minor, gi)));
      for (const ci of cis) out.set(...caps(migCapsMinor(g.minor, gi, ci)));
    }
  }
  return out;
}

/**
 * `n` stand-in GPUs shaped after the recorded H200: minors 0..n-1, bus ids of an 8-GPU board's
 * slots (synthetic), UUIDs made from the index.
 */
export function standInGpus(n: number, model = 'NVIDIA H200'): GpuSpec[] {
  const buses = ['18', '2a', '3a', '5d', '9a', 'ab', 'ba', 'db'];
  return Array.from({ length: n }, (_, i) => ({
    busId: `0000:${buses[i % 8] as string}:${String(Math.floor(i / 8)).padStart(2, '0')}.0`,
    uuid: `GPU-${String(i).padStart(8, '0')}-0000-4000-8000-${(0xc0b2e470c1d7 + i).toString(16)}`,
    minor: i,
    model,
  }));
}
