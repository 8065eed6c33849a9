/**
 * Devices the operator leaves out (storage-only or management HCAs, a GPU kept for something
 * else). An HCA is not read at all (read/hca.ts skips it by name); what else the cycle knows of a
 * left-out device (its holders, rdma cgroup charges, locality) is taken out of the joined snapshot
 * whole, before attribution, so that it has no series and holds nothing. A job holding only an
 * excluded device is no holder of anything here; one holding an excluded and a kept device is
 * judged on the kept one as before.
 */
import type { Locality } from '../read/pci-topology.js';
import type { QpReading } from '../qp/qp-parse.js';
import type { RdmaEvidence } from '../read/rdma-cgroup.js';
import type { DeviceHolders, ExcludedDevice, NodeSnapshot } from './snapshot.js';

/**
 * Why a device is left out, or undefined when it is kept. `names`: the names it is known by, its
 * own first (an HCA: `mlx5_0`; a GPU: `nvidia<minor>` and its UUID). Built from the command line.
 */
export type DeviceFilter = (names: readonly string[]) => string | undefined;

/** The names a GPU is known by to the filter. */
export function gpuNames(gpu: { readonly minor: number; readonly uuid: string }): string[] {
  return [`nvidia${gpu.minor}`, gpu.uuid];
}

/** The snapshot without the devices `filter` leaves out, and the list of those. */
export function withoutExcluded(snap: NodeSnapshot, filter: DeviceFilter | undefined): NodeSnapshot {
  if (filter === undefined) return snap;
  // Those the reading already left out (nothing of theirs read), and any it was not told of.
  const excluded: ExcludedDevice[] = (snap.hca.leftOut ?? []).map((h) => ({
    kind: 'hca',
    device: h.device,
    ports: h.ports,
    why: filter([h.device]) ?? 'left out',
  }));
  const hcas = snap.hca.hcas.filter((h) => {
    const why = filter([h.device]);
    if (why !== undefined) excluded.push({ kind: 'hca', device: h.device, ports: h.ports.map((p) => p.port), why });
    return why === undefined;
  });
  const goneHcas = new Set(excluded.map((e) => e.device));
  const goneGpus = new Map<string, ExcludedDevice>();
  const units = snap.gpus.units.filter((u) => {
    const why = filter(gpuNames(u.gpu));
    if (why !== undefined && !goneGpus.has(u.gpu.uuid))
      goneGpus.set(u.gpu.uuid, { kind: 'gpu', device: `nvidia${u.gpu.minor}`, ports: [], uuid: u.gpu.uuid, why });
    return why === undefined;
  });
  if (excluded.length === 0 && goneGpus.size === 0) return snap;
  const goneUnits = new Set(snap.gpus.units.filter((u) => goneGpus.has(u.gpu.uuid)).map((u) => u.key));
  const goneBusIds = new Set(snap.gpus.units.filter((u) => goneGpus.has(u.gpu.uuid)).map((u) => u.gpu.busId));
  return {
    ...snap,
    hca: { ...snap.hca, hcas },
    holders: without(snap.holders, goneHcas),
    gpus: { ...snap.gpus, units },
    gpuHolders: without(snap.gpuHolders, goneUnits),
    rdma: rdmaWithout(snap.rdma, goneHcas),
    ...(snap.locality ? { locality: localityWithout(snap.locality, goneBusIds, goneHcas) } : {}),
    excluded: [...excluded, ...goneGpus.values()],
  };
}

/** A QP reading without the entries on excluded HCAs (the rdma tool reports every device). */
export function qpReadingWithout(reading: QpReading | undefined, excluded: ReadonlySet<string>): QpReading | undefined {
  if (reading === undefined || excluded.size === 0) return reading;
  const { qps, ...rest } = reading;
  return {
    ...rest,
    counters: reading.counters.filter((c) => !excluded.has(c.device)),
    ...(qps === undefined ? {} : { qps: qps.filter((q) => !excluded.has(q.device)) }),
  };
}

function without(m: ReadonlyMap<string, DeviceHolders>, gone: ReadonlySet<string>): ReadonlyMap<string, DeviceHolders> {
  return gone.size === 0 ? m : new Map([...m].filter(([k]) => !gone.has(k)));
}

/** Each job's rdma.current without the lines of excluded HCAs. */
function rdmaWithout(
  rdma: ReadonlyMap<string, RdmaEvidence>,
  gone: ReadonlySet<string>,
): ReadonlyMap<string, RdmaEvidence> {
  if (gone.size === 0) return rdma;
  return new Map(
    [...rdma].map(([key, e]) => [key, { ...e, charges: new Map([...e.charges].filter(([d]) => !gone.has(d))) }]),
  );
}

function localityWithout(l: Locality, gpus: ReadonlySet<string>, hcas: ReadonlySet<string>): Locality {
  return {
    gpus: new Map([...l.gpus].filter(([busId]) => !gpus.has(busId))),
    hcas: new Map([...l.hcas].filter(([name]) => !hcas.has(name))),
    pairs: l.pairs.filter((p) => !gpus.has(p.gpu) && !hcas.has(p.hca)),
  };
}
