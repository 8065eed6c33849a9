/**
 * Values the renderers derive from the fake cluster's records the same way in every API version:
 * the nodes' reserved resources, output paths, slurmdbd's TRES arrays and sdiag's row order.
 */
import type { ClusterView, FakeDiag, FakeJob, FakeTres, RpcTypeCounter, RpcUserCounter } from './fake-cluster-types.js';
import { jobCpus } from './fake-cluster-types.js';

/** CPUs the fake nodes keep for the system (CpuSpecList `0-1`). */
export const SPECIALIZED_CPUS = '0-1';
export const SPECIALIZED_CPU_COUNT = 2;
export const SPECIALIZED_MEMORY_MIB = 8192;
/** Main scheduler cycles per minute: one per simulation tick. */
export const SCHEDULE_CYCLES_PER_MINUTE = 6;

/** Paths slurmctld reports; slurmdbd reports the unexpanded `%j` pattern instead. */
export function stdoutPath(j: FakeJob, expanded: boolean): string {
  return `/home/${j.user.name}/slurm-${expanded ? j.id : '%j'}.out`;
}

/** One slurmdbd TRES entry. Ids are the usual ones of a fresh slurmdbd (gres get 1001+). */
export type TresEntry = FakeTres;

export const TRES_IDS = { cpu: 1, mem: 2, node: 4, billing: 5, 'gres/gpu': 1001 } as const;

/** The TRES arrays slurmdbd returns: requested always, allocated once the job was allocated. */
export function tresEntries(j: FakeJob, which: 'requested' | 'allocated', gpuType: string): TresEntry[] {
  if (which === 'allocated' && j.allocTres === '') return [];
  const cpus = jobCpus(j);
  const gpus = j.gpusPerNode * j.nodeCount;
  const out: TresEntry[] = [
    { type: 'cpu', name: '', id: TRES_IDS.cpu, count: cpus },
    { type: 'mem', name: '', id: TRES_IDS.mem, count: j.memPerNodeMiB * j.nodeCount },
    { type: 'node', name: '', id: TRES_IDS.node, count: j.nodeCount },
    { type: 'billing', name: '', id: TRES_IDS.billing, count: cpus },
  ];
  if (gpus > 0) out.push({ type: 'gres', name: 'gpu', id: TRES_IDS['gres/gpu'], count: gpus });
  if (gpus > 0 && which === 'allocated' && gpuType !== '')
    out.push({ type: 'gres', name: `gpu:${gpuType}`, id: 1002, count: gpus });
  return out;
}

export function gpuTypeOf(j: FakeJob, view: ClusterView): string {
  const first = j.nodeIdx[0];
  return first === undefined ? '' : (view.nodes[first]?.gpuType ?? '');
}

/** sdiag lists RPC rows by descending count; rows never used are not listed. */
export function sortedRpcTypes(d: FakeDiag): RpcTypeCounter[] {
  return d.rpcsByType.filter((r) => r.count > 0).sort((a, b) => b.count - a.count || a.typeId - b.typeId);
}

export function sortedRpcUsers(d: FakeDiag): RpcUserCounter[] {
  return d.rpcsByUser.filter((r) => r.count > 0).sort((a, b) => b.count - a.count || a.uid - b.uid);
}

export function average(total: number, count: number): number {
  return count > 0 ? Math.floor(total / count) : 0;
}

/**
 * A job's gres_detail, one entry per node as slurmctld prints it: `gpu:<type>:<count>(IDX:<first>-<last>)`
 * (a single index alone); every version that has the member renders it from here.
 */
export function jobGresDetail(j: FakeJob, view: ClusterView): string[] {
  if (j.gpusPerNode === 0 || j.nodeIdx.length === 0) return [];
  const type = gpuTypeOf(j, view);
  const starts = gpuStartsOf(view).get(j.id);
  return j.nodeIdx.map((_, i) => {
    const first = starts?.[i] ?? 0;
    const range = j.gpusPerNode === 1 ? `${first}` : `${first}-${first + j.gpusPerNode - 1}`;
    return `gpu:${type}:${j.gpusPerNode}(IDX:${range})`;
  });
}

const gpuStarts = new WeakMap<ClusterView, ReadonlyMap<number, readonly number[]>>();

/**
 * The first GRES index of each running GPU job on each of its nodes: running jobs fill a node's
 * GPUs in job id order, so on every node their indices are distinct and together make the
 * `0-<allocated-1>` that the node's gres_used names. A finished job keeps indices from 0.
 */
function gpuStartsOf(view: ClusterView): ReadonlyMap<number, readonly number[]> {
  const known = gpuStarts.get(view);
  if (known !== undefined) return known;
  const starts = new Map<number, number[]>();
  const next = new Map<number, number>();
  const running = view.jobs.filter((j) => j.state === 'RUNNING' && j.gpusPerNode > 0).sort((a, b) => a.id - b.id);
  for (const j of running)
    starts.set(
      j.id,
      j.nodeIdx.map((n) => {
        const first = next.get(n) ?? 0;
        next.set(n, first + j.gpusPerNode);
        return first;
      }),
    );
  gpuStarts.set(view, starts);
  return starts;
}
