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
