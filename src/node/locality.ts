/**
 * Which (GPU, HCA) pairs each job holds, with their PCI relation: the join of the fd walk's holders
 * (GPU units and HCAs by allocation) with the cycle's locality reading. observe.ts makes series of
 * it and explain shows it.
 */
import type { Attribution } from './join/attribution.js';
import type { NodeSnapshot } from './join/snapshot.js';
import type { Gpu } from './read/gpus.js';
import type { Relation } from './read/pci-topology.js';

export interface JobPair {
  readonly jobId: string;
  readonly gpu: Gpu;
  readonly hca: string;
  readonly relation: Relation;
  /** The job is the sole holder of both the GPU (every unit of it that it holds) and the HCA (every port). */
  readonly attributed: boolean;
}

/** The node's GPUs by bus id, from the cycle's units (a MIG GPU has several units, one GPU). */
export function gpusByBusId(snap: NodeSnapshot): Map<string, Gpu> {
  return new Map(snap.gpus.units.map((u) => [u.gpu.busId, u.gpu]));
}

/** Every (job, GPU, HCA) where a resolved job holds both and the pair has a relation. */
export function jobPairs(snap: NodeSnapshot, attr: Attribution): JobPair[] {
  if (!snap.locality || snap.locality.pairs.length === 0) return [];
  const relationOf = new Map(snap.locality.pairs.map((p) => [`${p.gpu} ${p.hca}`, p.relation]));
  const gpus = heldGpus(snap);
  const hcas = heldHcas(snap);
  const soleGpu = soleKeys(attr.gpus ?? [], (v) => [v.unit.gpu.busId]);
  const soleHca = soleKeys(attr.verdicts, (v) => [v.device]);
  const out: JobPair[] = [];
  for (const a of snap.allocations) {
    const jobId = a.jobId;
    if (jobId === undefined) continue;
    for (const gpu of gpus.get(a.key) ?? [])
      for (const hca of hcas.get(a.key) ?? []) {
        const relation = relationOf.get(`${gpu.busId} ${hca}`);
        if (relation === undefined) continue;
        const attributed = soleGpu.get(`${jobId} ${gpu.busId}`) === true && soleHca.get(`${jobId} ${hca}`) === true;
        out.push({ jobId, gpu, hca, relation, attributed });
      }
  }
  return out;
}

/** Allocation key → the GPUs (whole, not units) its processes hold. */
function heldGpus(snap: NodeSnapshot): Map<string, Gpu[]> {
  const byKey = new Map(snap.gpus.units.map((u) => [u.key, u.gpu]));
  const out = new Map<string, Map<string, Gpu>>();
  for (const [unitKey, h] of snap.gpuHolders) {
    const gpu = byKey.get(unitKey);
    if (gpu === undefined) continue;
    for (const key of h.allocations) {
      const m = out.get(key) ?? new Map<string, Gpu>();
      m.set(gpu.busId, gpu);
      out.set(key, m);
    }
  }
  return new Map([...out].map(([k, m]) => [k, [...m.values()]]));
}

/** Allocation key → the HCAs it holds (by fd, rdma cgroup charge or verbs context). */
function heldHcas(snap: NodeSnapshot): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const [device, h] of snap.holders)
    for (const key of h.allocations) out.set(key, [...(out.get(key) ?? []), device]);
  return out;
}

/**
 * `job key` → whether every verdict on that key names the job sole: a GPU with MIG has several
 * units, an HCA several ports; one shared or suppressed makes the pair unattributed.
 */
function soleKeys<V extends { status: string; soleJobId?: string; jobs: readonly string[] }>(
  verdicts: readonly V[],
  keysOf: (v: V) => string[],
): Map<string, boolean> {
  const out = new Map<string, boolean>();
  for (const v of verdicts)
    for (const key of keysOf(v))
      for (const job of v.jobs) {
        const k = `${job} ${key}`;
        out.set(k, (out.get(k) ?? true) && v.status === 'sole' && v.soleJobId === job);
      }
  return out;
}
