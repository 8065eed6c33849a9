/**
 * One cycle's reading of the node, joined: job cgroups → processes → uverbs
 * fds → HCAs. Plain data; the attribution rules decide what it means.
 */
import { pidLeft, scanCgroups, type Allocation, type ScopeInfo } from '../read/cgroups.js';
import { readHcas, UverbsMap, verbsByDevice, type HcaCache, type HcaScan, type VerbsDevices } from '../read/hca.js';
import type { JobIdResolver } from '../read/jobids.js';
import type { FdScanner } from '../read/owners.js';
import type { ProbeResult } from '../read/fd-probe.js';
import { readLocality, type Locality, type LocalityCache } from '../read/pci-topology.js';
import { GPU_KEY_PREFIX, gpuUnits, readGpus, type GpuCache, type GpuUnit } from '../read/gpus.js';
import { Problems, type Problem } from '../read/problems.js';
import {
  chargedDevices,
  listedDevices,
  ProcessCharges,
  rdmaControllerPresent,
  readRdmaCurrent,
  type ListedDevices,
  type RdmaEvidence,
} from '../read/rdma-cgroup.js';
import { join, procHidesProcesses, readSmall, type Roots } from '../read/roots.js';
import type { JobMetadata, JobMetadataSource } from '../read/squeue.js';
import type { GpuAllocationSource, GpuAllocationTable } from '../read/gres-source.js';
import type { Steps } from '../../steps.js';
import {
  classifyUnreadable,
  describeUnreadable,
  heldByEvidence,
  type ContextsOf,
  type UnreadablePolicy,
  type UnreadableProcess,
} from '../read/unreadable.js';
import type { JobUsage } from '../read/job-usage.js';
import { jobUsages } from './job-usage.js';
import { contextsOf, type ContextReading, type RdmaContexts } from '../read/rdma-contexts.js';

export interface JobAllocation extends Allocation {
  /** Resolved job id; undefined when it could not be resolved (then `unresolved` says why). */
  readonly jobId?: string;
  readonly unresolved?: string;
}

/**
 * What shows a holder: an fd on the device's uverbs file, a verbs context charged in an rdma
 * cgroup, or one the kernel's list of contexts names the process for.
 */
export type HolderEvidence = 'fd' | 'rdma-cgroup' | 'rdma-context';

export interface DeviceHolders {
  /** Allocation keys of the jobs holding the device. */
  readonly allocations: readonly string[];
  /** Processes outside every job cgroup holding the device. */
  readonly nonJobPids: readonly number[];
  /** Job PIDs holding it, for the explain table. */
  readonly jobPids: readonly number[];
  /** Allocation key → what shows the job holds the device. */
  readonly jobEvidence: ReadonlyMap<string, readonly HolderEvidence[]>;
  /** PID outside the jobs → what shows it holds the device. */
  readonly nonJobEvidence: ReadonlyMap<number, readonly HolderEvidence[]>;
  /** PID → the paths of its fds on the device as the process knows them (fd link text). */
  readonly paths: ReadonlyMap<number, readonly string[]>;
}

/** A device the operator left out (excluded.ts), named for explain and the landing page. */
export interface ExcludedDevice {
  readonly kind: 'hca' | 'gpu';
  /** `mlx5_0`, or `nvidia<minor>`. */
  readonly device: string;
  /** The HCA's ports; none for a GPU. */
  readonly ports: readonly string[];
  /** The GPU's UUID. */
  readonly uuid?: string;
  /** Which of the operator's patterns left it out. */
  readonly why: string;
}

export interface NodeSnapshot {
  readonly atMs: number;
  readonly hca: HcaScan;
  readonly allocations: readonly JobAllocation[];
  readonly scopes: readonly ScopeInfo[];
  /** HCA name → who holds it (only devices with holders). */
  readonly holders: ReadonlyMap<string, DeviceHolders>;
  /** The node's GPUs as units of attribution (whole GPUs, or MIG compute instances), and why none. */
  readonly gpus: { readonly present: boolean; readonly reason?: string; readonly units: readonly GpuUnit[] };
  /** GPU unit key → who holds it (only units with holders). */
  readonly gpuHolders: ReadonlyMap<string, DeviceHolders>;
  /** Where the GPUs and HCAs sit in the PCI tree and each pair's relation (none without GPUs). */
  readonly locality?: Locality;
  /** Which GPUs Slurm gave each job here, as last read in the background; or why unknown. */
  readonly gpuAllocation?: GpuAllocationTable;
  /** Why no port's attribution can be trusted this cycle (empty when knowledge is complete). */
  readonly gaps: readonly string[];
  /** Processes whose fd table could not be read, named, with their effect on attribution. */
  readonly unreadable: readonly UnreadableProcess[];
  /** Allocation key → its job cgroup's rdma.current, where the job cgroup has one. */
  readonly rdma: ReadonlyMap<string, RdmaEvidence>;
  /** Whether the cgroup root holds any Slurm hierarchy, and what was looked for. */
  readonly slurmCgroups: { readonly found: boolean; readonly searched: string };
  /** user/account/partition per job id; undefined when no metadata source is configured. */
  readonly metadata?: ReadonlyMap<string, JobMetadata>;
  /** CPU and memory use of each resolved job from its cgroup; absent with --job-usage off. */
  readonly usage?: ReadonlyMap<string, JobUsage>;
  /** Command names of the processes holding a device (for the explain views). */
  readonly holderNames: ReadonlyMap<number, string>;
  readonly problems: readonly Problem[];
  /** Devices left out by the operator's patterns: in no series and holding nothing (absent: none). */
  readonly excluded?: readonly ExcludedDevice[];
  readonly stats: {
    readonly processes: number;
    readonly fdLinksRead: number;
    /** fds whose device number was asked (stat): paths on a local filesystem, new since the last cycle. */
    readonly fdsStated: number;
    /** fds on a filesystem the agent never asks (network, FUSE), new since the last cycle. */
    readonly fdsSkipped: number;
    /** fds named like a device on such a filesystem, asked from a child process this cycle, by result. */
    readonly fdProbes: ReadonlyMap<ProbeResult, number>;
    /** Processes whose fd table the rdma cgroup charges stand in for (not read unless every fd table is). */
    readonly coveredByRdmaCgroup: number;
  };
}

export interface Readers {
  readonly roots: Roots;
  readonly fds: FdScanner;
  /** What does not change in sysfs between cycles (identity files, counter names). */
  readonly hcaCache?: HcaCache;
  readonly jobIds: JobIdResolver;
  readonly metadata?: JobMetadataSource;
  readonly unreadable: UnreadablePolicy;
  /**
   * Read every fd table, also of processes whose cgroup's rdma.current already tells what they
   * hold (explain: to name the holding PIDs).
   */
  readonly readAllFds?: boolean;
  /** The kernel's list of verbs contexts, read when a process's fds cannot all be known. */
  readonly contexts?: RdmaContexts;
  /** The GPU inventory kept between cycles (parsed again only when the driver's files change). */
  readonly gpuCache?: GpuCache;
  /** GPU ↔ HCA locality kept between cycles (read again only when the device set changes). */
  readonly localityCache?: LocalityCache;
  /** Slurm's GPU allocation on this node, read in the background (gres-source.ts). */
  readonly gpuAllocation?: GpuAllocationSource;
  /** Read each job's CPU and memory use from its cgroup (--job-usage on). */
  readonly jobUsage?: boolean;
  /** HCAs the operator left out: none of their files is read (excluded.ts takes them out whole). */
  readonly leftOutHca?: (device: string) => boolean;
}

/** What a context reading says of a process; a thread's id is mapped to its process through procfs. */
function contextsReader(procfs: string, reading: ContextReading | undefined): ContextsOf {
  if (reading === undefined) return () => undefined;
  const tgids = new Map<number, number | undefined>();
  const tgidOf = (id: number): number | undefined => {
    if (!tgids.has(id)) {
      const status = readSmall(join(procfs, String(id), 'status'));
      const m = status.ok ? /^Tgid:\s+(\d+)$/m.exec(status.value) : null;
      tgids.set(id, m ? Number(m[1]) : undefined);
    }
    return tgids.get(id);
  };
  return (pid) => contextsOf(reading, pid, tgidOf);
}

/** One snapshot, yielding during the fd scan (the part that can take seconds): collect.ts runs it. */
export function* snapshotSteps(readers: Readers, nowMs: number): Steps<NodeSnapshot> {
  const problems = new Problems();
  const { roots } = readers;
  // cgroups before /proc: a PID listed in a job but absent from /proc afterwards has exited or is hidden.
  const cgroups = scanCgroups(roots.cgroupfs, problems);
  const allocationOf = new Map<number, string>();
  for (const a of cgroups.allocations) for (const pid of [...a.pids, ...a.stepdPids]) allocationOf.set(pid, a.key);
  const devices = listedDevices(roots.sysfs);
  const rdma = jobCharges(cgroups.allocations, problems, devices);
  const known = new Map(cgroups.allocations.flatMap((a) => [...(a.cgroupOf ?? [])]));
  const charges = new ProcessCharges(roots.procfs, roots.cgroupfs, problems, known, devices);
  const gpuInventory = readGpus(roots.nvidiaProcfs ?? roots.procfs, problems, readers.gpuCache);
  const gpus = gpuUnits(gpuInventory);
  // The rdma cgroup's charges stand in for a process's fd table only where HCAs are all there is
  // to hold: they say nothing of GPUs.
  const skipCovered = readers.readAllFds !== true && gpus.units.length === 0;
  const coverage = rdmaControllerPresent(roots.cgroupfs)
    ? { test: (pid: number) => covered(pid, allocationOf, rdma, known, charges), skip: skipCovered }
    : undefined;
  let verbs: VerbsDevices | undefined;
  // Device number → holder key, of every class: uverbs devices (`uverbs3`) and GPU units (`gpu:…`).
  let held: ReadonlyMap<string, string> | undefined;
  const devicesOf = (): ReadonlyMap<string, string> =>
    (held ??= new Map([...(verbs ??= verbsByDevice(roots.sysfs, problems)).byDevice, ...gpus.byDevice]));
  const owners = yield* readers.fds.scanSteps(nowMs, problems, devicesOf, coverage);
  const hca = readHcas(roots.sysfs, problems, readers.hcaCache, readers.leftOutHca);
  const locality =
    gpuInventory.gpus.length === 0
      ? undefined
      : readLocality(
          roots.sysfs,
          gpuInventory.gpus.map((g) => g.busId),
          hca.hcas.map((h) => h.device),
          problems,
          readers.localityCache,
        );
  const resolutions = readers.jobIds.resolve(cgroups.allocations, problems);
  const gaps = [...cgroups.gaps, ...(verbs?.gaps ?? [])];

  const allocations: JobAllocation[] = cgroups.allocations.map((a) => {
    for (const g of a.gaps) gaps.push(`job ${a.id}: ${g}`);
    for (const pid of [...a.pids, ...a.stepdPids]) {
      if (!owners.present.has(pid) && !pidLeft(a, pid))
        gaps.push(`job ${a.id}: PID ${pid} is in the job cgroup but not visible in /proc`);
    }
    const r = resolutions.get(a.key);
    return r && 'jobId' in r ? { ...a, jobId: r.jobId } : { ...a, unresolved: r?.unresolved ?? 'not resolved' };
  });
  const jobs = new Map(allocations.map((a) => [a.key, { key: a.key, label: a.jobId ?? a.id }]));
  const reading: { value?: ContextReading } = {};
  // Asked only when needed, and awaited within the cycle (bounded by the rdma timeout): a list
  // from an earlier cycle would miss contexts opened since.
  if (owners.unreadable.length > 0 && readers.contexts !== undefined)
    yield readers.contexts.read().then((r) => void (r === undefined ? undefined : (reading.value = r)));
  const unreadable = classifyUnreadable(
    roots.procfs,
    owners.unreadable,
    (pid) => jobs.get(allocationOf.get(pid) ?? ''),
    readers.unreadable,
    (lines) => charges.ofLines(lines),
    contextsReader(roots.procfs, reading.value),
  );
  for (const u of unreadable) if (u.effect === 'node' && u.onlyOn === undefined) gaps.push(describeUnreadable(u));
  if (process.geteuid?.() !== 0 && procHidesProcesses(roots.procfs))
    gaps.push(
      `${roots.procfs} is mounted with hidepid and the agent is not root: other users' processes are invisible`,
    );

  const holders = new HolderTable();
  const gpuHolders = new HolderTable();
  const uverbs = new UverbsMap(roots.sysfs, problems);
  for (const [dev, holdings] of owners.holders) {
    if (dev.startsWith(GPU_KEY_PREFIX)) {
      for (const h of holdings) gpuHolders.add(dev, h.pid, allocationOf.get(h.pid), 'fd', h.paths);
      continue;
    }
    const device = uverbs.device(dev);
    if (device === undefined) {
      gaps.push(`${dev}: HCA unknown (no readable ibdev)`);
      continue;
    }
    for (const h of holdings) holders.add(device, h.pid, allocationOf.get(h.pid), 'fd', h.paths);
  }
  for (const [key, e] of rdma)
    for (const device of chargedDevices(e.charges)) holders.add(device, undefined, key, 'rdma-cgroup');
  for (const u of unreadable)
    for (const device of heldByEvidence(u))
      holders.add(device, u.pid, u.allocation, u.contexts === undefined ? 'rdma-cgroup' : 'rdma-context');
  for (const pid of owners.covered) {
    const allocation = allocationOf.get(pid);
    // A job process's job is the holder, by the job cgroup's charges above; explain, reading every
    // fd table, names the process too.
    if (allocation !== undefined && readers.readAllFds !== true) continue;
    const e = charges.of(pid);
    for (const device of e ? chargedDevices(e.charges) : []) holders.add(device, pid, allocation, 'rdma-cgroup');
  }
  const metadata = readers.metadata ? jobMetadata(readers.metadata, allocations) : undefined;
  const usage = readers.jobUsage === true ? jobUsages(allocations, problems) : undefined;
  const holderNames = new Map<number, string>();
  for (const pid of new Set([...holders.pids(), ...gpuHolders.pids()].flatMap((p) => [...p]))) {
    // The stat read for the fd scan names the process; one not scanned (covered) is read here.
    const known = owners.names.get(pid);
    if (known !== undefined) holderNames.set(pid, known);
    else {
      const comm = readSmall(join(roots.procfs, String(pid), 'comm'), { utf8: true });
      if (comm.ok) holderNames.set(pid, comm.value.trim());
    }
  }
  return {
    atMs: nowMs,
    hca,
    allocations,
    scopes: cgroups.scopes,
    holders: holders.result(),
    gpus: {
      present: gpuInventory.present,
      ...(gpuInventory.reason === undefined ? {} : { reason: gpuInventory.reason }),
      units: gpus.units,
    },
    gpuHolders: gpuHolders.result(),
    ...(locality ? { locality } : {}),
    gpuAllocation: gpuAllocationOf(readers.gpuAllocation, gpus.units.length > 0, allocations),
    gaps,
    unreadable,
    rdma,
    slurmCgroups: { found: cgroups.foundSlurm, searched: cgroups.searched },
    holderNames,
    ...(metadata ? { metadata } : {}),
    ...(usage ? { usage } : {}),
    problems: problems.list(),
    stats: {
      processes: owners.stats.processes,
      fdLinksRead: owners.stats.fdLinksRead,
      fdsStated: owners.stats.fdsStated,
      fdsSkipped: owners.stats.fdsSkipped,
      fdProbes: owners.stats.fdProbes,
      coveredByRdmaCgroup: owners.covered.length,
    },
  };
}

/**
 * Whether the kernel's charges stand in for a process's fd table. A job process: when its job
 * cgroup has rdma.current and the process was listed in that tree (v2, or the v1 rdma hierarchy),
 * since every context created below the job cgroup is charged to it (charges go to the ancestors,
 * and a cgroup without the controller enabled charges its nearest ancestor that has it). Any
 * other process: when its own cgroup has rdma.current.
 */
function covered(
  pid: number,
  allocationOf: ReadonlyMap<number, string>,
  jobs: ReadonlyMap<string, RdmaEvidence>,
  listed: ReadonlyMap<number, string>,
  charges: ProcessCharges,
): boolean {
  const key = allocationOf.get(pid);
  if (key !== undefined) return jobs.has(key) && listed.has(pid);
  return charges.of(pid) !== undefined;
}

/** The rdma.current of each job cgroup that has one. */
function jobCharges(
  allocations: readonly Allocation[],
  problems: Problems,
  devices: ListedDevices,
): Map<string, RdmaEvidence> {
  const out = new Map<string, RdmaEvidence>();
  for (const a of allocations) {
    const e = a.rdmaDir === undefined ? undefined : readRdmaCurrent(a.rdmaDir, problems, devices);
    if (e) out.set(a.key, e);
  }
  return out;
}

interface MutableHolders {
  allocations: Set<string>;
  nonJobPids: Set<number>;
  jobPids: Set<number>;
  jobEvidence: Map<string, Set<HolderEvidence>>;
  nonJobEvidence: Map<number, Set<HolderEvidence>>;
  paths: Map<number, readonly string[]>;
}

/** Holders per device, each with the evidence that shows it. */
class HolderTable {
  private readonly byDevice = new Map<string, MutableHolders>();

  /**
   * A holder: a process (pid) of a job (allocation key), a job known only by its cgroup (no pid),
   * or a process outside the jobs.
   */
  add(
    device: string,
    pid: number | undefined,
    allocation: string | undefined,
    evidence: HolderEvidence,
    paths?: readonly string[],
  ): void {
    let h = this.byDevice.get(device);
    if (!h)
      this.byDevice.set(
        device,
        (h = {
          allocations: new Set(),
          nonJobPids: new Set(),
          jobPids: new Set(),
          jobEvidence: new Map(),
          nonJobEvidence: new Map(),
          paths: new Map(),
        }),
      );
    if (pid !== undefined && paths !== undefined) h.paths.set(pid, paths);
    if (allocation !== undefined) {
      h.allocations.add(allocation);
      if (pid !== undefined) h.jobPids.add(pid);
      addTo(h.jobEvidence, allocation, evidence);
    } else if (pid !== undefined) {
      h.nonJobPids.add(pid);
      addTo(h.nonJobEvidence, pid, evidence);
    }
  }

  /** The PIDs named as holders, device by device. */
  pids(): Set<number>[] {
    return [...this.byDevice.values()].map((h) => new Set([...h.jobPids, ...h.nonJobPids]));
  }

  result(): Map<string, DeviceHolders> {
    const out = new Map<string, DeviceHolders>();
    for (const [d, h] of this.byDevice) {
      out.set(d, {
        allocations: [...h.allocations],
        nonJobPids: [...h.nonJobPids],
        jobPids: [...h.jobPids],
        jobEvidence: frozen(h.jobEvidence),
        nonJobEvidence: frozen(h.nonJobEvidence),
        paths: h.paths,
      });
    }
    return out;
  }
}

function addTo<K>(m: Map<K, Set<HolderEvidence>>, key: K, e: HolderEvidence): void {
  const s = m.get(key);
  if (s) s.add(e);
  else m.set(key, new Set([e]));
}

function frozen<K>(m: Map<K, Set<HolderEvidence>>): Map<K, HolderEvidence[]> {
  return new Map([...m].map(([k, s]) => [k, [...s].sort()]));
}

/** The allocation table as last read; while the node has GPUs, asks about the jobs on it now. */
function gpuAllocationOf(
  source: GpuAllocationSource | undefined,
  hasGpus: boolean,
  allocations: readonly JobAllocation[],
): GpuAllocationTable {
  if (source === undefined) return { known: false, why: 'not read (--gpu-allocation none)' };
  if (hasGpus) source.want(allocations.flatMap((a) => (a.jobId === undefined ? [] : [a.jobId])));
  return source.current();
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
