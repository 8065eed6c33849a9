/**
 * `slurm-otel explain --job N`: one job's view of this node. Its cgroups, its processes, the HCA
 * ports and GPUs it holds (or was given) with each one's status and why, so that a user sees why
 * the job has series or lacks them, and its CPU and memory use against its limit.
 */
import type { Cycle } from '../node/join/cycle.js';
import { attributionRows, evidenceText, holderText, type Holder } from '../node/explain.js';
import { SLUID_RE, type JobDir } from '../node/read/cgroups.js';
import type { JobUsage } from '../node/read/job-usage.js';
import type { JobAllocation } from '../node/join/snapshot.js';
import { InvalidArgumentError } from 'commander';
import { CollectionIncomplete } from './common.js';

/** The job is not on this node: exit code 1, like a collection that could not finish. */
export class JobNotOnNode extends CollectionIncomplete {}

/** At most this many job ids are listed when the job asked for is not on the node. */
const LISTED_JOBS = 20;

export interface JobProcess {
  readonly pid: number;
  readonly comm: string;
  /** slurmstepd of one of the job's steps, not a task. */
  readonly stepd: boolean;
}

export interface JobPort {
  readonly device: string;
  readonly port: string;
  readonly status: string;
  readonly why: string;
  /** The job's processes holding the device (none when only its cgroup's charges show it). */
  readonly holders: readonly Holder[];
  readonly evidence: string;
}

export interface JobGpu {
  readonly device: string;
  readonly uuid: string;
  readonly mig?: string;
  readonly status: string;
  readonly why: string;
  /** Whether one of the job's processes holds it. */
  readonly held: boolean;
  /** The job's processes with an fd on it. */
  readonly pids: readonly number[];
  /** Slurm gave it to this job; absent when the allocation is unknown. */
  readonly allocated?: boolean;
}

export type JobGpuAllocation =
  { readonly known: true; readonly devices: readonly string[] } | { readonly known: false; readonly why: string };

export interface JobView {
  readonly job: string;
  /** The job's directory name where it is a SLUID (26.05's default v2 layout). */
  readonly sluid?: string;
  readonly cgroups: readonly JobDir[];
  readonly processes: readonly JobProcess[];
  readonly ports: readonly JobPort[];
  readonly gpus: readonly JobGpu[];
  /** Absent when job usage was not read (or the job's cgroup vanished meanwhile). */
  readonly usage?: JobUsage;
  /** Seconds since the job's oldest process on this node started; absent when none could be read. */
  readonly elapsedSeconds?: number;
  /** The GPUs (device numbers) Slurm gave the job here; absent without --gpu-allocation slurm. */
  readonly gpuAllocation?: JobGpuAllocation;
}

/** The job argument: a numeric job id or a SLUID; anything else is a usage error. */
export function parseJobArg(text: string): string {
  if (/^\d{1,10}$/.test(text) || SLUID_RE.test(text)) return text;
  throw new InvalidArgumentError(`"${text}" is neither a job id (digits) nor a SLUID.`);
}

/** The job ids on the node (allocation ids for those not resolved), sorted, each once. */
export function jobsOnNode(c: Cycle): string[] {
  return [...new Set(c.snapshot.allocations.map(label))].sort();
}

/** The message for a job that is not on the node, naming those that are. */
export function notOnNodeMessage(c: Cycle, job: string): string {
  const jobs = jobsOnNode(c);
  if (jobs.length === 0) return `job ${job} is not on this node: no jobs are`;
  const more = jobs.length > LISTED_JOBS ? ` and ${jobs.length - LISTED_JOBS} more` : '';
  return `job ${job} is not on this node; jobs here: ${jobs.slice(0, LISTED_JOBS).join(', ')}${more}`;
}

function label(a: JobAllocation): string {
  return a.jobId ?? a.id;
}

/**
 * The view of one job (by job id, or by SLUID where its directory is named so); undefined when
 * no allocation on the node is that job. `commOf` names the job's processes (holders are named
 * by the cycle already); `ageOf` says how long ago one started, for the job's elapsed time.
 */
export function jobView(
  c: Cycle,
  job: string,
  commOf: (pid: number) => string | undefined,
  ageOf: (pid: number) => number | undefined = () => undefined,
): JobView | undefined {
  const { snapshot: snap } = c;
  const mine = snap.allocations.filter((a) => a.jobId === job || a.id === job);
  const first = mine[0];
  if (first === undefined) return undefined;
  const jobId = label(first);
  const stepd = new Set(mine.flatMap((a) => a.stepdPids));
  const pids = [...new Set(mine.flatMap((a) => [...a.pids, ...a.stepdPids]))].sort((x, y) => x - y);
  const name = (pid: number): string => snap.holderNames.get(pid) ?? commOf(pid) ?? '?';
  const sluid = mine.find((a) => a.idKind === 'sluid')?.id;
  const usage = first.jobId === undefined ? undefined : snap.usage?.get(first.jobId);
  const gpuAllocation = gpuAllocationOf(c, first.jobId);
  const ages = pids.flatMap((pid) => ageOf(pid) ?? []);
  return {
    job: jobId,
    ...(sluid === undefined ? {} : { sluid }),
    cgroups: mine.flatMap((a) => (a.jobDirs ?? []).map(({ controllers, dir }) => ({ controllers, dir }))),
    processes: pids.map((pid) => ({ pid, comm: name(pid), stepd: stepd.has(pid) })),
    ports: portsOf(c, jobId, first),
    gpus: gpusOf(c, jobId, new Set(pids), gpuAllocation),
    ...(usage === undefined ? {} : { usage }),
    ...(ages.length === 0 ? {} : { elapsedSeconds: Math.max(...ages) }),
    ...(gpuAllocation === undefined ? {} : { gpuAllocation }),
  };
}

/** The ports the job holds, with the attribution's status and why for each. */
function portsOf(c: Cycle, jobId: string, a: JobAllocation): JobPort[] {
  // attributionRows names an unresolved allocation `<id> (unresolved)`.
  const names = new Set([jobId, `${a.id} (unresolved)`]);
  return attributionRows(c).flatMap((r) =>
    r.jobs
      .filter((j) => names.has(j.jobId))
      .map((j) => ({
        device: r.device,
        port: r.port,
        status: r.status,
        why: r.why,
        holders: j.holders,
        evidence: evidenceText(j.evidence),
      })),
  );
}

/** The GPUs the job holds or Slurm gave it, with the attribution's status and why for each. */
function gpusOf(
  c: Cycle,
  jobId: string,
  pids: ReadonlySet<number>,
  allocation: JobGpuAllocation | undefined,
): JobGpu[] {
  const given = new Set(allocation?.known === true ? allocation.devices : []);
  return (c.attribution.gpus ?? []).flatMap((v) => {
    const held = v.jobs.includes(jobId);
    const allocated = allocation?.known === true ? given.has(v.unit.gpu.device) : undefined;
    if (!held && allocated !== true) return [];
    return [
      {
        device: `nvidia${v.unit.gpu.minor}`,
        uuid: v.unit.gpu.uuid,
        ...(v.unit.gi === undefined ? {} : { mig: `gi ${v.unit.gi} ci ${v.unit.ci ?? '?'}` }),
        status: v.status,
        why: v.why,
        held,
        pids: v.jobPids.filter((p) => pids.has(p)),
        ...(allocated === undefined ? {} : { allocated }),
      },
    ];
  });
}

/** Slurm's GPUs for the job; undefined when the allocation was not asked (--gpu-allocation none). */
function gpuAllocationOf(c: Cycle, jobId: string | undefined): JobGpuAllocation | undefined {
  const table = c.snapshot.gpuAllocation;
  if (table === undefined || (!table.known && table.why.includes('--gpu-allocation none'))) return undefined;
  if (!table.known) return { known: false, why: table.why };
  const devices = jobId === undefined ? undefined : table.jobs.get(jobId);
  if (devices === undefined) return { known: false, why: 'Slurm has not answered for this job' };
  return { known: true, devices };
}

const GIB = 2 ** 30;
const MIB = 2 ** 20;

function bytes(n: number | undefined): string {
  if (n === undefined) return '?';
  return n < GIB ? `${(n / MIB).toFixed(1)} MiB` : `${(n / GIB).toFixed(1)} GiB`;
}

function percent(part: number, whole: number): string {
  return `${((100 * part) / whole).toFixed(1)} %`;
}

function seconds(n: number | undefined): string {
  return n === undefined ? '?' : `${n.toFixed(1)} s`;
}

/** The view as lines for a terminal (the caller makes node text printable). */
export function renderJobView(v: JobView, devicePaths: ReadonlyMap<string, string> = new Map()): string[] {
  const lines = [`job ${v.job}${v.sluid === undefined || v.sluid === v.job ? '' : ` (${v.sluid})`}`];
  for (const d of v.cgroups) lines.push(`cgroup: ${d.dir}${d.controllers === '' ? '' : ` (${d.controllers})`}`);
  for (const p of v.processes) lines.push(`process: ${p.pid} ${p.comm}${p.stepd ? ' (slurmstepd)' : ''}`);
  if (v.ports.length === 0) lines.push('ports: the job holds no HCA port');
  for (const p of v.ports) {
    const who = p.holders.length === 0 ? '' : `${p.holders.map(holderText).join(', ')} `;
    lines.push(`port: ${p.device} ${p.port}: ${who}${p.evidence}: ${p.status}: ${p.why}`);
  }
  if (v.gpus.length === 0) lines.push('gpus: the job holds no GPU');
  for (const g of v.gpus) {
    const gpu = g.mig === undefined ? g.device : `${g.device} (${g.mig})`;
    const held = g.held ? `held by ${g.pids.join(', ') || 'the job'}` : 'not held by the job';
    const given = g.allocated === undefined ? '' : g.allocated ? ', given by Slurm' : ', not given by Slurm';
    lines.push(`gpu: ${gpu} ${g.uuid}: ${held}${given}: ${g.status}: ${g.why}`);
  }
  lines.push(usageLine(v.usage));
  if (v.usage !== undefined) lines.push(cpuLine(v.usage, v.elapsedSeconds), memoryLine(v.usage));
  const a = v.gpuAllocation;
  if (a !== undefined)
    lines.push(
      a.known
        ? `slurm gpus: ${a.devices.map((d) => devicePaths.get(d) ?? d).join(', ') || 'none'}`
        : `slurm gpus: unknown (${a.why})`,
    );
  return lines;
}

function usageLine(u: JobUsage | undefined): string {
  if (u === undefined) return 'usage: not read';
  const limit = u.memoryLimitBytes === undefined ? 'no limit' : `limit ${bytes(u.memoryLimitBytes)}`;
  return (
    `usage: cpu user ${seconds(u.cpuUserSeconds)}, system ${seconds(u.cpuSystemSeconds)}; ` +
    `memory ${bytes(u.memoryBytes)}, peak ${bytes(u.memoryPeakBytes)}, ${limit}; oom kills ${u.oomKills ?? '?'}`
  );
}

/**
 * CPU time against the CPUs the job was given here and the time since it started here:
 * "2.1 s over 12.0 s on 4 CPUs = 4.4 %". The CPUs are the job's cpuset, known only where Slurm
 * constrains the job's cores.
 */
function cpuLine(u: JobUsage, elapsed: number | undefined): string {
  if (u.cpuUserSeconds === undefined || u.cpuSystemSeconds === undefined) return 'cpu: not read';
  const used = u.cpuUserSeconds + u.cpuSystemSeconds;
  const over = elapsed === undefined ? ' (time since start unknown)' : ` over ${seconds(elapsed)}`;
  if (u.cpusAllocated === undefined)
    return `cpu: ${seconds(used)}${over}; CPUs allocated: unknown (the job has no cpuset of its own: Slurm constrains cores only with ConstrainCores=yes)`;
  const cpus = `${u.cpusAllocated} CPU${u.cpusAllocated === 1 ? '' : 's'}`;
  if (elapsed === undefined || elapsed <= 0) return `cpu: ${seconds(used)}${over} on ${cpus}`;
  return `cpu: ${seconds(used)}${over} on ${cpus} = ${percent(used, elapsed * u.cpusAllocated)}`;
}

/** Peak memory (or, where the kernel keeps no peak, memory now) against the job's limit here. */
function memoryLine(u: JobUsage): string {
  const peak = u.memoryPeakBytes ?? u.memoryBytes;
  if (peak === undefined) return 'memory: not read';
  const what = u.memoryPeakBytes === undefined ? 'now' : 'peak';
  if (u.memoryLimitBytes === undefined) return `memory: ${what} ${bytes(peak)}, no limit`;
  return `memory: ${what} ${bytes(peak)} of ${bytes(u.memoryLimitBytes)} = ${percent(peak, u.memoryLimitBytes)}`;
}

/** Slurm's device numbers → the GRES file paths, for naming the GPUs Slurm gave the job. */
export function gresPaths(c: Cycle): Map<string, string> {
  const t = c.snapshot.gpuAllocation;
  if (t === undefined || !t.known) return new Map();
  return new Map(t.files.flatMap((f) => (f.device === undefined ? [] : [[f.device, f.path] as const])));
}
