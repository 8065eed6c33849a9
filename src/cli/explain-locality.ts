/** explain's locality block: where each GPU sits relative to each HCA, and the pairs each job holds. */
import type { Cycle } from '../node/join/cycle.js';
import { jobPairs } from '../node/locality.js';
import { isPlaced, type Relation } from '../node/read/pci-topology.js';

export interface LocalityView {
  readonly gpus: readonly {
    readonly device: string;
    readonly busId: string;
    readonly numaNode?: number;
    /** HCA → relation; absent when the GPU has no place (then `unplaced` says why). */
    readonly relations?: Readonly<Record<string, Relation>>;
    readonly unplaced?: string;
  }[];
  /** HCAs with no place in the PCI tree, and why. */
  readonly unplacedHcas: Readonly<Record<string, string>>;
  readonly jobs: readonly {
    readonly job: string;
    readonly gpu: string;
    readonly hca: string;
    readonly relation: Relation;
    readonly attributed: boolean;
  }[];
}

/** Undefined when the cycle read no locality (no GPUs). */
export function localityView(c: Cycle): LocalityView | undefined {
  const loc = c.snapshot.locality;
  if (loc === undefined) return undefined;
  const gpus = [...new Map(c.snapshot.gpus.units.map((u) => [u.gpu.busId, u.gpu])).values()].map((gpu) => {
    const place = loc.gpus.get(gpu.busId);
    const device = `nvidia${gpu.minor}`;
    if (!isPlaced(place)) return { device, busId: gpu.busId, unplaced: place?.unplaced ?? 'not read' };
    const relations = Object.fromEntries(loc.pairs.filter((p) => p.gpu === gpu.busId).map((p) => [p.hca, p.relation]));
    return {
      device,
      busId: gpu.busId,
      ...(place.numaNode === undefined ? {} : { numaNode: place.numaNode }),
      relations,
    };
  });
  const unplacedHcas = Object.fromEntries([...loc.hcas].flatMap(([h, p]) => (isPlaced(p) ? [] : [[h, p.unplaced]])));
  const jobs = jobPairs(c.snapshot, c.attribution).map((j) => ({
    job: j.jobId,
    gpu: `nvidia${j.gpu.minor}`,
    hca: j.hca,
    relation: j.relation,
    attributed: j.attributed,
  }));
  return { gpus, unplacedHcas, jobs };
}

const FAR: Partial<Record<Relation, string>> = {
  SYS: 'far: across NUMA nodes',
  NODE: 'far: another host bridge of the NUMA node',
  unknown: 'another host bridge, NUMA node unknown',
};

/** One line per GPU, per HCA without a place and per job pair. */
export function renderLocality(v: LocalityView): string[] {
  const lines: string[] = [];
  for (const g of v.gpus) {
    const at = `${g.device} (${g.busId}${g.numaNode === undefined ? '' : `, NUMA ${g.numaNode}`})`;
    const rel = Object.entries(g.relations ?? {}).map(([h, r]) => `${h} ${r}`);
    lines.push(`locality: ${at}: ${g.unplaced ?? (rel.join(', ') || 'no HCA')}`);
  }
  for (const [h, why] of Object.entries(v.unplacedHcas)) lines.push(`locality: ${h}: ${why}`);
  for (const j of v.jobs) {
    const far = FAR[j.relation];
    lines.push(`locality: job ${j.job} holds ${j.gpu} and ${j.hca}: ${j.relation}${far ? ` (${far})` : ''}`);
  }
  return lines;
}
