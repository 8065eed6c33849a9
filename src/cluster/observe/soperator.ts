/**
 * Snapshot → the cluster's snapshot families, with Soperator's label conventions: every label of
 * a family on every point, empty string for "unset" (never "undefined"), times as Unix-second
 * strings. A sub-collector that has not succeeded yet contributes no family at all, so a failing
 * /jobs never blanks the node families and vice versa.
 */
import {
  point,
  type AnyFamily,
  type Family,
  type LazyFamily,
  type Point,
  type AttributesOf,
} from '../../telemetry/spec.js';
import { expandHostlist } from '../hostlist.js';
import { CLUSTER_METRICS as M } from '../metrics.js';
import { JOB_TERMINAL_STATES, type NodeTopology, type SlurmDiag, type SlurmJob, type SlurmNode } from '../model.js';
import { flagValue, isUnavailable, legacyStateLabels, stateFlagLabels } from '../node-state.js';
import type { ClusterSnapshot } from '../snapshot.js';
import { nodesByName, uniqueJobs, type ClusterState } from '../state.js';
import { jobCpuCount, jobMemoryBytes, parseTres } from '../tres.js';
import { MIB, family, lazy, maybe, memoized, perItem, uniqueValues } from './helpers.js';

export const RESERVATION_NAME_MAX = 50;

/** Soperator's families of the snapshot: its nodes, jobs and controller families. */
export function soperatorFamilies(snap: ClusterSnapshot, nowMs: number): AnyFamily[] {
  return [
    ...(snap.nodes ? nodeFamilies(snap.nodes.value, snap.topology?.value) : []),
    ...(snap.jobs ? jobFamilies(snap.jobs.value, nowMs, snap.topology?.value) : []),
    ...(snap.diag ? diagFamilies(snap.diag.value) : []),
  ];
}

/** Unix seconds as a label; empty when unset or 0. */
export function timeLabel(t: number | undefined): string {
  return t === undefined || !(t > 0) ? '' : String(Math.trunc(t));
}

/** Trimmed by code points, so a multi-byte name is never cut in half. */
export function trimReservation(name: string | undefined): string {
  const chars = Array.from(name ?? '');
  return chars.length <= RESERVATION_NAME_MAX ? (name ?? '') : chars.slice(0, RESERVATION_NAME_MAX).join('');
}

// ---- nodes ----

export function nodeInfoLabels(node: SlurmNode, topology?: NodeTopology): AttributesOf<typeof M.nodeInfo> {
  return {
    node_name: node.name,
    instance_id: node.instance_id ?? '',
    nodeset_name: topology?.nodesetName ?? '',
    ...legacyStateLabels(node.state),
    ...stateFlagLabels(node.state),
    is_unavailable: flagValue(isUnavailable(node.state)),
    reservation_name: trimReservation(node.reservation),
    address: node.address ?? '',
    reason: node.reason ?? '',
    comment: node.comment ?? '',
  };
}

interface NodeResources {
  readonly cpusTotal?: number;
  readonly cpusAllocated?: number;
  readonly cpusIdle?: number;
  readonly cpusEffective?: number;
  readonly memTotal?: number;
  readonly memAllocated?: number;
  readonly memFree?: number;
  readonly memEffective?: number;
}

/** Slurm's MiB → bytes; configured TRES stand in when the node does not report its totals. */
export function nodeResources(node: SlurmNode): NodeResources {
  const tres = parseTres(node.tres);
  const realBytes = node.real_memory === undefined ? undefined : node.real_memory * MIB;
  const effective =
    realBytes === undefined ? tres.memory_bytes : Math.max(0, realBytes - (node.specialized_memory ?? 0) * MIB);
  return {
    cpusTotal: node.cpus ?? tres.cpus,
    cpusAllocated: node.alloc_cpus,
    cpusIdle: node.alloc_idle_cpus,
    cpusEffective: node.effective_cpus,
    memTotal: realBytes ?? tres.memory_bytes,
    memAllocated: node.alloc_memory === undefined ? undefined : node.alloc_memory * MIB,
    memFree: node.free_mem === undefined ? undefined : node.free_mem * MIB,
    memEffective: effective,
  };
}

type NodeResourceSpec = (typeof M)[
  | 'nodeCpusTotal'
  | 'nodeCpusAllocated'
  | 'nodeCpusIdle'
  | 'nodeCpusEffective'
  | 'nodeMemoryTotal'
  | 'nodeMemoryAllocated'
  | 'nodeMemoryFree'
  | 'nodeMemoryEffective'];

const NODE_RESOURCE_FAMILIES: readonly [NodeResourceSpec, keyof NodeResources][] = [
  [M.nodeCpusTotal, 'cpusTotal'],
  [M.nodeCpusAllocated, 'cpusAllocated'],
  [M.nodeCpusIdle, 'cpusIdle'],
  [M.nodeCpusEffective, 'cpusEffective'],
  [M.nodeMemoryTotal, 'memTotal'],
  [M.nodeMemoryAllocated, 'memAllocated'],
  [M.nodeMemoryFree, 'memFree'],
  [M.nodeMemoryEffective, 'memEffective'],
];

type Topologies = ReadonlyMap<string, NodeTopology> | undefined;
const NO_TOPOLOGY: NodeTopology = { nodesetName: '', nvlinkInstanceGroup: '' };

function nodeFamilies(list: readonly SlurmNode[], topology: Topologies): LazyFamily[] {
  // Node names are distinct (nodesByName), and so are the partitions listed per node.
  const nodes = [...nodesByName(list).values()];
  const name = (n: SlurmNode): AttributesOf<typeof M.nodeCpusTotal> => ({ node_name: n.name });
  const perResource = NODE_RESOURCE_FAMILIES.map(([spec, key]) =>
    lazy(
      spec,
      perItem(spec, nodes, name, (n) => nodeResources(n)[key]),
    ),
  );
  return [
    lazy(
      M.nodeInfo,
      perItem(
        M.nodeInfo,
        nodes,
        (n) => nodeInfoLabels(n, topology?.get(n.name)),
        () => 1,
      ),
    ),
    ...perResource,
    lazy(M.nodePartition, function* () {
      for (const n of nodes)
        for (const partition of uniqueValues(n.partitions))
          yield point(M.nodePartition, { node_name: n.name, partition }, 1);
    }),
    lazy(M.nodeNvlinkInstanceGroup, function* () {
      for (const n of nodes) {
        const t = topology?.get(n.name);
        if (t === undefined || t.nvlinkInstanceGroup === '') continue;
        const labels = {
          node_name: n.name,
          instance_id: n.instance_id ?? '',
          nvlink_instance_group: t.nvlinkInstanceGroup,
          nodeset_name: t.nodesetName,
        };
        yield point(M.nodeNvlinkInstanceGroup, labels, 1);
      }
    }),
  ];
}

// ---- jobs ----

function isTerminal(job: SlurmJob): boolean {
  return JOB_TERMINAL_STATES.has(job.state[0] ?? '');
}

/** Slurm echoes user_name into mail_user when none was given; only a real address is a label value. */
function userMail(job: SlurmJob): string {
  const user = job.user_name ?? '';
  return job.mail_user !== undefined && user !== '' && job.mail_user !== user ? job.mail_user : '';
}

export function jobInfoLabels(job: SlurmJob): AttributesOf<typeof M.jobInfo> {
  const end = timeLabel(job.end_time);
  return {
    job_id: job.job_id,
    job_state: job.state[0] ?? '',
    job_state_reason: job.state_reason ?? '',
    slurm_partition: job.partition ?? '',
    job_name: job.name ?? '',
    user_name: job.user_name ?? '',
    user_mail: userMail(job),
    user_id: job.user_id === undefined ? '' : String(job.user_id),
    standard_error: job.standard_error ?? '',
    standard_output: job.standard_output ?? '',
    array_job_id: job.array_job_id ?? '',
    array_task_id: job.array_task_id ?? '',
    submit_time: timeLabel(job.submit_time),
    start_time: timeLabel(job.start_time),
    end_time: end,
    finished_time: isTerminal(job) ? end : '',
  };
}

/**
 * Seconds the job has run: to now while it runs, to its end once terminal (only with a real end).
 * A pending job's start_time is the scheduler's forecast, not a start, so it has no duration.
 */
export function jobDurationSeconds(job: SlurmJob, nowMs: number): number | undefined {
  if (job.start_time === undefined || !(job.start_time > 0) || (job.state[0] ?? '') === 'PENDING') return undefined;
  if (isTerminal(job)) {
    return job.end_time !== undefined && job.end_time >= job.start_time ? job.end_time - job.start_time : undefined;
  }
  const seconds = nowMs / 1000 - job.start_time;
  return seconds >= 0 ? seconds : undefined;
}

/** A pending job's tres_alloc_str is a tentative plan (seen on BeginTime jobs), not an allocation. */
export function jobGpuCount(job: SlurmJob): number | undefined {
  if ((job.state[0] ?? '') === 'PENDING') return undefined;
  const gpus = parseTres(job.tres_alloc_str).gpus;
  return gpus !== undefined && gpus > 0 ? gpus : undefined;
}

/** Host names of the job; a malformed hostlist gives none rather than failing the snapshot. */
function jobHosts(job: SlurmJob): string[] {
  try {
    return expandHostlist(job.nodes);
  } catch {
    return [];
  }
}

function jobFamilies(list: readonly SlurmJob[], nowMs: number, topology: Topologies): LazyFamily[] {
  // Job ids are distinct (uniqueJobs), and so are the hosts listed per job.
  const jobs = uniqueJobs(list);
  const id = (j: SlurmJob): AttributesOf<typeof M.jobCpus> => ({ job_id: j.job_id });
  const cpuCount = memoized(jobCpuCount, (j) => [j.tres_alloc_str, j.tres_req_str, j.cpus]);
  const memoryBytes = memoized(jobMemoryBytes, (j) => [
    j.tres_alloc_str,
    j.tres_req_str,
    j.memory_per_node,
    j.node_count,
  ]);
  const gpuCount = memoized(jobGpuCount, (j) => [j.state[0], j.tres_alloc_str]);
  return [
    lazy(
      M.jobInfo,
      perItem(M.jobInfo, jobs, jobInfoLabels, () => 1),
    ),
    lazy(M.nodeJob, function* () {
      for (const job of jobs)
        for (const host of uniqueValues(jobHosts(job))) {
          const t = topology?.get(host) ?? NO_TOPOLOGY;
          const labels = {
            job_id: job.job_id,
            node_name: host,
            nvlink_instance_group: t.nvlinkInstanceGroup,
            nodeset_name: t.nodesetName,
          };
          yield point(M.nodeJob, labels, 1);
        }
    }),
    lazy(
      M.jobDuration,
      perItem(M.jobDuration, jobs, id, (j) => jobDurationSeconds(j, nowMs)),
    ),
    lazy(M.jobCpus, perItem(M.jobCpus, jobs, id, cpuCount)),
    lazy(M.jobMemory, perItem(M.jobMemory, jobs, id, memoryBytes)),
    lazy(M.jobGpus, perItem(M.jobGpus, jobs, id, gpuCount)),
  ];
}

// ---- controller ----

/**
 * The RPC totals are slurmctld's own counters: their start time is when its statistics were last
 * reset (req_time_start), so a controller restart shows up as a counter reset, not a drop.
 */
function diagFamilies(diag: SlurmDiag): Family[] {
  const start = diag.req_time_start === undefined ? undefined : diag.req_time_start * 1000;
  const calls: Point[] = [];
  const time: Point[] = [];
  const userCalls: Point[] = [];
  const userTime: Point[] = [];
  // As Soperator's exporter: an entry with no calls, or no time, has no series for it (checked apart).
  const positive = (v: number): number | undefined => (v > 0 ? v : undefined);
  for (const r of diag.rpcs_by_message_type) {
    maybe(calls, M.rpcCalls, { message_type: r.message_type }, positive(r.count), start);
    maybe(time, M.rpcDuration, { message_type: r.message_type }, positive(r.total_time_us / 1e6), start);
  }
  for (const r of diag.rpcs_by_user) {
    const attributes = { user: r.user, user_id: r.user_id === undefined ? '' : String(r.user_id) };
    maybe(userCalls, M.rpcUserCalls, attributes, positive(r.count), start);
    maybe(userTime, M.rpcUserDuration, attributes, positive(r.total_time_us / 1e6), start);
  }
  const threads: Point[] = [];
  maybe(threads, M.serverThreadCount, {}, diag.server_thread_count);
  return [
    family(M.rpcCalls, calls),
    family(M.rpcDuration, time),
    family(M.rpcUserCalls, userCalls),
    family(M.rpcUserDuration, userTime),
    family(M.serverThreadCount, threads),
  ];
}

/** Families only this agent's state knows: each listed job's accumulated GPU seconds. */
export function observeState(state: ClusterState): Family[] {
  const points = [...(state.jobs?.gpuSeconds ?? [])].map(([job_id, g]) =>
    point(M.jobGpuSeconds, { job_id }, g.seconds, g.sinceMs),
  );
  return [{ spec: M.jobGpuSeconds, points }];
}
