/**
 * Processes whose fd table the agent cannot read: who they are (PID, comm,
 * cgroup), why the kernel refused, and what that costs attribution.
 *
 * Such a process may hold any HCA. Inside a Slurm job it can only add its own
 * job as a holder; outside every job it would make a port `nonjob`. Policies:
 * - strict: an unreadable process outside every job makes every port incomplete.
 * - ignore-outside-jobs: it is assumed to hold no HCA. The risk: a storage
 *   daemon hidden that way makes a port it shares with one job look sole.
 * An unreadable job process suppresses that job and every port it could share
 * under both policies (the rule itself is in join/attribution.ts).
 *
 * Kernel evidence comes first, under either policy. The kernel's list of verbs
 * contexts (rdma-contexts.ts), when it could be read this cycle, says per
 * process which HCAs it holds a context on: those make it a holder, the others
 * cannot carry its traffic; only HCAs with contexts the list names no process
 * for stay unknown, and the policy's effect is limited to those (`onlyOn`).
 * Else, when the process's own cgroup has `rdma.current`, a cgroup charged no
 * HCA handle holds no HCA (the process costs nothing), and one charged on some
 * devices holds those only (their ports get it as a holder: its job, or a
 * process outside the jobs). So no one process can blind ports it cannot reach.
 */
import { cgroupLines, inSlurmJob, type CgroupLine } from './cgroups.js';
import type { UnreadableFds } from './owners.js';
import { chargedDevices, type RdmaEvidence } from './rdma-cgroup.js';
import type { ProcessContexts } from './rdma-contexts.js';
import { join, LIST_LIMIT, readSmall } from './roots.js';
import { type Read } from './result.js';

export { cgroupLines, type CgroupLine } from './cgroups.js';

export type UnreadablePolicy = 'strict' | 'ignore-outside-jobs';
export const UNREADABLE_POLICIES: readonly UnreadablePolicy[] = ['strict', 'ignore-outside-jobs'];

/**
 * job: suppresses its job and every port that job could share; node: every port; ignored: assumed
 * to hold no HCA; cleared: its cgroup's rdma.current charges no HCA; charged: it holds the devices
 * its cgroup's rdma.current charges, and no other.
 */
export type UnreadableEffect = 'job' | 'node' | 'ignored' | 'cleared' | 'charged';

export interface UnreadableProcess {
  readonly pid: number;
  readonly comm: string;
  /** Its cgroup from the world-readable /proc/<pid>/cgroup; '?' when even that cannot be read. */
  readonly cgroup: string;
  readonly errno: string;
  readonly scope: 'job' | 'outside';
  /** Allocation key and job id (or allocation id) of its job, when the cgroup scan found that job. */
  readonly allocation?: string;
  readonly job?: string;
  readonly effect: UnreadableEffect;
  /**
   * What the policy alone makes of it (job, node or ignored): its cost on devices no kernel
   * evidence covers (GPUs: neither the rdma cgroup nor the list of verbs contexts says anything of them).
   */
  readonly policyEffect: UnreadableEffect;
  /** Its own cgroup's rdma.current, when there is one: the file and the devices with a verbs context charged. */
  readonly rdma?: { readonly file: string; readonly charged: readonly string[] };
  /** The kernel's list of verbs contexts, when read this cycle: what it says of this process. */
  readonly contexts?: ProcessContexts;
  /** The HCAs a `job` or `node` effect is limited to (those with contexts of unknown owners); all when absent. */
  readonly onlyOn?: readonly string[];
  /** Why the kernel refused, and what to do about it. */
  readonly cause: string;
  /** The link text of its fd named like a device that this host does not have (a tree not of this host). */
  readonly missing?: string;
}

/** The agent's own privileges, from <procfs>/self/status. */
export interface Privileges {
  /** Effective uid. */
  readonly uid: number;
  readonly ptrace: boolean;
  readonly dacReadSearch: boolean;
}

const CAP_DAC_READ_SEARCH = 2n;
const CAP_SYS_PTRACE = 19n;

export function readPrivileges(procfs: string): Privileges | undefined {
  const status = readSmall(join(procfs, 'self', 'status'), { limit: LIST_LIMIT });
  if (!status.ok) return undefined;
  const uid = /^Uid:\s+\d+\s+(\d+)/m.exec(status.value)?.[1];
  const capEff = /^CapEff:\s+([0-9a-fA-F]{1,16})\s*$/m.exec(status.value)?.[1];
  if (uid === undefined || capEff === undefined) return undefined;
  const caps = BigInt(`0x${capEff}`);
  const has = (bit: bigint) => ((caps >> bit) & 1n) === 1n;
  return { uid: Number(uid), ptrace: has(CAP_SYS_PTRACE), dacReadSearch: has(CAP_DAC_READ_SEARCH) };
}

export interface JobOf {
  readonly key: string;
  readonly label: string;
}

/** The charges of a process's own cgroup, from its /proc/<pid>/cgroup lines; undefined when there are none. */
export type RdmaOf = (lines: readonly CgroupLine[]) => RdmaEvidence | undefined;

/** What the kernel's list of verbs contexts says of a process; undefined when it was not read this cycle. */
export type ContextsOf = (pid: number) => ProcessContexts | undefined;

/** Names each unreadable process and decides its effect: kernel evidence first, else the policy. */
export function classifyUnreadable(
  procfs: string,
  fds: readonly UnreadableFds[],
  jobOf: (pid: number) => JobOf | undefined,
  policy: UnreadablePolicy,
  rdmaOf: RdmaOf = () => undefined,
  contextsOf: ContextsOf = () => undefined,
): UnreadableProcess[] {
  if (fds.length === 0) return [];
  const privileges = readPrivileges(procfs);
  const out: UnreadableProcess[] = [];
  for (const { pid, errno, uncertain, missing } of fds) {
    const dir = join(procfs, String(pid));
    const cg = readSmall(join(dir, 'cgroup'), { limit: LIST_LIMIT });
    // Exited since its fd table was tried: it holds nothing now.
    if (!cg.ok && gone(readSmall(join(dir, 'stat')))) continue;
    const paths = cg.ok ? cgroupLines(cg.value) : [];
    const job = jobOf(pid);
    const inJob = job !== undefined || paths.some((l) => inSlurmJob(l.path));
    // Outside is trusted only when its cgroup says so; a job the scan did not see costs every port.
    const policyEffect: UnreadableEffect = job
      ? 'job'
      : !inJob && cg.ok && policy === 'ignore-outside-jobs'
        ? 'ignored'
        : 'node';
    // A tree not of this host: the host kernel's list of verbs contexts says nothing of its processes.
    const contexts = missing === undefined ? contextsOf(pid) : undefined;
    const evidence = rdmaOf(paths);
    const rdma = evidence && { file: evidence.file, charged: chargedDevices(evidence.charges) };
    const comm = readSmall(join(dir, 'comm'), { utf8: true });
    out.push({
      pid,
      errno,
      policyEffect,
      ...effectOf(policyEffect, rdma, contexts),
      ...(rdma ? { rdma } : {}),
      comm: comm.ok ? comm.value.trim() : '?',
      cgroup: cg.ok ? displayCgroup(paths) : '?',
      scope: inJob ? 'job' : 'outside',
      ...(job ? { allocation: job.key, job: job.label } : {}),
      cause:
        missing !== undefined
          ? missingCause()
          : uncertain === undefined
            ? unreadableCause(errno, privileges, !inJob && policy === 'strict')
            : uncertainCause(uncertain),
      ...(missing === undefined ? {} : { missing }),
    });
  }
  return out;
}

/** Kernel evidence first (the context list, else the cgroup's charges), else the policy. */
function effectOf(
  policyEffect: UnreadableEffect,
  rdma: UnreadableProcess['rdma'],
  contexts: ProcessContexts | undefined,
): Pick<UnreadableProcess, 'effect' | 'contexts' | 'onlyOn'> {
  if (contexts !== undefined) {
    const known: UnreadableEffect = contexts.held.length === 0 ? 'cleared' : 'charged';
    if (contexts.unknownOn.length === 0 || policyEffect === 'ignored') return { effect: known, contexts };
    return { effect: policyEffect, contexts, onlyOn: contexts.unknownOn };
  }
  if (rdma === undefined) return { effect: policyEffect };
  return { effect: rdma.charged.length === 0 ? 'cleared' : 'charged' };
}

/** The HCAs a process holds by kernel evidence (it is a holder there whatever its effect elsewhere). */
export function heldByEvidence(u: UnreadableProcess): readonly string[] {
  if (u.contexts !== undefined) return u.contexts.held;
  return u.effect === 'charged' ? (u.rdma?.charged ?? []) : [];
}

/** Whether the process's `job` or `node` effect reaches `device`. */
export function blindsDevice(u: UnreadableProcess, device: string): boolean {
  return u.onlyOn === undefined || u.onlyOn.includes(device);
}

function gone(r: Read<unknown>): boolean {
  return !r.ok && r.kind === 'gone';
}

/**
 * One line out of /proc/<pid>/cgroup: a Slurm job path if any, else the v2
 * path, else the v1 freezer or pids path (where Slurm and systemd place
 * tasks), else the first; v1 paths carry their controller.
 */
export function displayCgroup(lines: readonly CgroupLine[]): string {
  const v1 = (c: string) => lines.find((l) => l.controllers.split(',').includes(c) && l.path !== '/');
  const v2 = lines.find((l) => l.controllers === '');
  const pick =
    lines.find((l) => inSlurmJob(l.path)) ??
    (v2 && v2.path !== '/' ? v2 : undefined) ??
    v1('freezer') ??
    v1('pids') ??
    v2 ??
    lines[0];
  if (!pick) return '?';
  return pick.controllers === '' ? pick.path : `${pick.controllers}:${pick.path}`;
}

const NEEDS = 'CAP_SYS_PTRACE and CAP_DAC_READ_SEARCH';

/** Why the kernel refused, given the agent's privileges; `hint` adds the policy that lets attribution proceed. */
export function unreadableCause(errno: string, p: Privileges | undefined, hint: boolean): string {
  if (errno !== 'EACCES' && errno !== 'EPERM') return `unexpected ${errno} reading the fd table`;
  if (!p) return `the agent cannot read its own privileges (/proc/self/status); it needs root or ${NEEDS}`;
  const missing = [...(p.ptrace ? [] : ['CAP_SYS_PTRACE']), ...(p.dacReadSearch ? [] : ['CAP_DAC_READ_SEARCH'])];
  if (missing.length > 0) {
    return p.uid === 0
      ? `the agent runs as root but without ${missing.join(' and ')} (dropped by its unit or container): grant ${NEEDS}`
      : `the agent runs as uid ${p.uid} without ${missing.join(' and ')}: run it as root or grant it ${NEEDS}`;
  }
  const lsm = `the agent has ${NEEDS}, so a security module (SELinux deny_ptrace, Yama ptrace_scope 3, AppArmor) or a protected process made the kernel refuse`;
  return hint
    ? `${lsm}; --unreadable-processes ignore-outside-jobs assumes such processes outside Slurm jobs hold no HCA`
    : lsm;
}

/** Why a process whose fd table was read still counts as unreadable. */
function uncertainCause(what: string): string {
  return `${what} (a network, FUSE or stacked filesystem, asked only from a child process with a deadline): whether that fd is a verbs device is unknown`;
}

/** Why an fd whose link names a device this host does not have leaves the process unknown. */
function missingCause(): string {
  return "this procfs is a copy or a synthetic tree (a real one's fd links reach their device), so what the fd is cannot be known; explain --device-table gives the tree's device numbers";
}

/** One line naming the process, for gaps and logs. */
export function describeUnreadable(u: UnreadableProcess): string {
  const what =
    u.missing !== undefined
      ? `an fd on ${u.missing}, which this host does not have`
      : u.errno === 'uncertain'
        ? 'an fd that may be a verbs device'
        : `fd table unreadable (${u.errno})`;
  return `PID ${u.pid} (${u.comm}, cgroup ${u.cgroup}): ${what}`;
}

/** What the process costs attribution, in words. */
export function unreadableEffect(u: UnreadableProcess): string {
  if (u.contexts !== undefined) return contextsEffect(u, u.contexts);
  if (u.effect === 'ignored') return 'ignored: assumed to hold no HCA (--unreadable-processes ignore-outside-jobs)';
  if (u.effect === 'cleared')
    return `holds no HCA: its cgroup's ${u.rdma?.file ?? 'rdma.current'} charges no verbs context`;
  if (u.effect === 'charged') {
    const who = u.job !== undefined ? `job ${u.job} as a holder` : 'it as a holder outside the jobs';
    return `holds only ${u.rdma?.charged.join(', ') ?? '?'} (charged in ${u.rdma?.file ?? 'rdma.current'}): those ports count ${who}`;
  }
  if (u.effect === 'job') return `job ${u.job ?? '?'} and every port it could share are not attributed`;
  return u.scope === 'job'
    ? 'in a job cgroup the scan did not see: every port is incomplete'
    : 'every port is incomplete';
}

function contextsEffect(u: UnreadableProcess, c: ProcessContexts): string {
  const held =
    c.held.length === 0
      ? 'the kernel lists no verbs context of it'
      : `the kernel lists its verbs contexts on ${c.held.join(', ')} only (those ports count ${u.job !== undefined ? `job ${u.job}` : 'it'} as a holder)`;
  if (u.onlyOn === undefined) return held;
  const who =
    u.effect === 'job'
      ? `job ${u.job ?? '?'} is not attributed there, nor is a port it could share`
      : 'those ports are incomplete';
  return `${held}; ${u.onlyOn.join(', ')} also ${u.onlyOn.length === 1 ? 'has' : 'have'} contexts the kernel names no process for: ${who}`;
}

/** The whole story of one process: who, why, and what it costs. */
export function unreadableLine(u: UnreadableProcess): string {
  return `${describeUnreadable(u)}: ${u.cause}; ${unreadableEffect(u)}`;
}
