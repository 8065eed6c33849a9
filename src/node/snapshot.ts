/**
 * One cycle's reading of the node, joined: job cgroups → processes → uverbs
 * fds → HCAs. Plain data; the attribution rules decide what it means.
 */
import { pidLeft, scanCgroups, type Allocation, type ScopeInfo } from './cgroups.js';
import { readHcas, UverbsMap, type HcaScan } from './hca.js';
import type { JobIdResolver } from './jobids.js';
import type { FdScanner } from './owners.js';
import { Problems, type Problem } from './problems.js';
import { join, procHidesProcesses, readSmall, type Roots } from './roots.js';
import type { JobMetadata, JobMetadataSource } from './squeue.js';
import { classifyUnreadable, describeUnreadable, type UnreadablePolicy, type UnreadableProcess } from './unreadable.js';

export interface JobAllocation extends Allocation {
  /** Resolved job id; undefined when it could not be resolved (then `unresolved` says why). */
  readonly jobId?: string;
  readonly unresolved?: string;
}

export interface DeviceHolders {
  /** Allocation keys of the jobs holding the device. */
  readonly allocations: readonly string[];
  /** Processes outside every job cgroup holding the device. */
  readonly nonJobPids: readonly number[];
  /** Job PIDs holding it, for the explain table. */
  readonly jobPids: readonly number[];
}

export interface NodeSnapshot {
  readonly atMs: number;
  readonly hca: HcaScan;
  readonly allocations: readonly JobAllocation[];
  readonly scopes: readonly ScopeInfo[];
  /** HCA name → who holds it (only devices with holders). */
  readonly holders: ReadonlyMap<string, DeviceHolders>;
  /** Why no port's attribution can be trusted this cycle (empty when knowledge is complete). */
  readonly gaps: readonly string[];
  /** Processes whose fd table could not be read, named, with their effect on attribution. */
  readonly unreadable: readonly UnreadableProcess[];
  /** Whether the cgroup root holds any Slurm hierarchy, and what was looked for. */
  readonly slurmCgroups: { readonly found: boolean; readonly searched: string };
  /** user/account/partition per job id; undefined when no metadata source is configured. */
  readonly metadata?: ReadonlyMap<string, JobMetadata>;
  /** Command names of the processes holding a device (for the explain views). */
  readonly holderNames: ReadonlyMap<number, string>;
  readonly problems: readonly Problem[];
  readonly stats: { readonly processes: number; readonly fdLinksRead: number };
}

export interface Readers {
  readonly roots: Roots;
  readonly fds: FdScanner;
  readonly jobIds: JobIdResolver;
  readonly metadata?: JobMetadataSource;
  readonly unreadable: UnreadablePolicy;
}

export function takeSnapshot(readers: Readers, nowMs: number): NodeSnapshot {
  const problems = new Problems();
  const { roots } = readers;
  // cgroups before /proc: a PID listed in a job but absent from /proc afterwards has exited or is hidden.
  const cgroups = scanCgroups(roots.cgroupfs, problems);
  const owners = readers.fds.scan(nowMs, problems);
  const hca = readHcas(roots.sysfs, problems);
  const resolutions = readers.jobIds.resolve(cgroups.allocations, problems);
  const gaps = [...cgroups.gaps];

  const allocationOf = new Map<number, string>();
  const allocations: JobAllocation[] = cgroups.allocations.map((a) => {
    for (const pid of a.pids) allocationOf.set(pid, a.key);
    for (const pid of a.stepdPids) allocationOf.set(pid, a.key);
    for (const g of a.gaps) gaps.push(`job ${a.id}: ${g}`);
    for (const pid of [...a.pids, ...a.stepdPids]) {
      if (!owners.present.has(pid) && !pidLeft(a, pid)) gaps.push(`job ${a.id}: PID ${pid} is in the job cgroup but not visible in /proc`);
    }
    const r = resolutions.get(a.key);
    return r && 'jobId' in r ? { ...a, jobId: r.jobId } : { ...a, unresolved: r?.unresolved ?? 'not resolved' };
  });
  const jobs = new Map(allocations.map((a) => [a.key, { key: a.key, label: a.jobId ?? a.id }]));
  const unreadable = classifyUnreadable(roots.procfs, owners.unreadable, (pid) => jobs.get(allocationOf.get(pid) ?? ''), readers.unreadable);
  for (const u of unreadable) if (u.effect === 'node') gaps.push(describeUnreadable(u));
  if (process.geteuid?.() !== 0 && procHidesProcesses(roots.procfs)) gaps.push(`${roots.procfs} is mounted with hidepid and the agent is not root: other users' processes are invisible`);

  const uverbs = new UverbsMap(roots.sysfs, problems);
  const holders = new Map<string, { allocations: Set<string>; nonJobPids: number[]; jobPids: number[] }>();
  for (const [dev, pids] of owners.holders) {
    const device = uverbs.device(dev);
    if (device === undefined) {
      gaps.push(`${dev}: HCA unknown (no readable ibdev)`);
      continue;
    }
    let h = holders.get(device);
    if (!h) holders.set(device, (h = { allocations: new Set(), nonJobPids: [], jobPids: [] }));
    for (const pid of pids) {
      const key = allocationOf.get(pid);
      if (key === undefined) h.nonJobPids.push(pid);
      else {
        h.allocations.add(key);
        h.jobPids.push(pid);
      }
    }
  }
  const metadata = readers.metadata ? jobMetadata(readers.metadata, allocations) : undefined;
  const holderNames = new Map<number, string>();
  for (const pids of owners.holders.values()) {
    for (const pid of pids) {
      const comm = readSmall(join(roots.procfs, String(pid), 'comm'), { utf8: true });
      if (comm.ok) holderNames.set(pid, comm.value.trim());
    }
  }
  return {
    atMs: nowMs,
    hca,
    allocations,
    scopes: cgroups.scopes,
    holders: new Map([...holders].map(([d, h]) => [d, { ...h, allocations: [...h.allocations] }])),
    gaps,
    unreadable,
    slurmCgroups: { found: cgroups.foundSlurm, searched: cgroups.searched },
    holderNames,
    ...(metadata ? { metadata } : {}),
    problems: problems.list(),
    stats: { processes: owners.stats.processes, fdLinksRead: owners.stats.fdLinksRead },
  };
}

/** Metadata of the jobs on the node as far as the source knows it; asks for a refresh meanwhile. */
function jobMetadata(source: JobMetadataSource, allocations: readonly JobAllocation[]): Map<string, JobMetadata> {
  const out = new Map<string, JobMetadata>();
  for (const a of allocations) {
    const m = a.jobId === undefined ? undefined : source.lookup(a.jobId);
    if (m && a.jobId !== undefined) out.set(a.jobId, m);
  }
  if (allocations.length > 0) source.want();
  return out;
}
