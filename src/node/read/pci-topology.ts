/**
 * GPU ↔ HCA locality from sysfs PCI topology: for each GPU and HCA their relation as
 * `nvidia-smi topo -m` names it (PIX, PXB, PHB, NODE, SYS), and each device's NUMA node. A pure
 * reader; the node's device set changes rarely, so a cache reads it again only when it does.
 *
 * Where each device sits: sysfs names a PCI function by its bus id, and the function's directory is
 * `devices/pci<domain>:<bus>/<function>/…/<function>`: the top directory is the root complex (one
 * PCIe host bridge), each directory below it one PCI function on the way down, the last the device
 * itself. A GPU is found at `bus/pci/devices/<bus id>` (a link into that tree), an HCA at
 * `class/infiniband/<hca>/device` (a link to its PCI function). Their real paths give the chain.
 *
 * How the relation is derived from two chains (see `relation`):
 * - different root complexes: NODE when both devices' `numa_node` is the same, SYS when it differs;
 *   when either is -1 (the firmware did not say; single-socket machines and many VMs) the relation
 *   is `unknown`: the two host bridges may or may not share a socket, and guessing would be a claim.
 * - same root complex: the functions between it and a device are, top first, a root port and then,
 *   for each PCIe switch on the way, the switch's upstream port and one of its downstream ports.
 *   A switch is named by its upstream port (the 2nd, 4th, … function of the chain). No switch in
 *   common: the path goes up through the root complex, PHB. Switches in common: the path crosses
 *   the deepest common switch and every switch below it on either side; one switch in all is PIX
 *   ("at most one bridge"), more is PXB ("multiple bridges, not the host bridge").
 *
 * What is uncertain: the pairing of functions into switches assumes the standard PCIe shape (every
 * switch shows as an upstream and a downstream port; NCCL reads sysfs the same way). A chain that
 * breaks it, such as a PCIe-to-PCI bridge, is still read by position and may be one level off. Two
 * devices directly under one root port (no switch) read PHB, where nvidia-smi may say PIX. Devices
 * without a PCI function (Soft-RoCE, a VM's paravirtual device) or outside `devices/pci…` (a VMD
 * domain) have no place: no relation, and the reason says why.
 */
import fs from 'node:fs';
import type { Problems } from './problems.js';
import { join, readSmall } from './roots.js';
import { classify } from './result.js';

export const RELATIONS = ['PIX', 'PXB', 'PHB', 'NODE', 'SYS', 'unknown'] as const;
export type Relation = (typeof RELATIONS)[number];

/** Where a PCI function sits in the tree. */
export interface PciPlace {
  /** The function's own name, `0000:5b:00.0`. */
  readonly busId: string;
  /** The `pci<domain>:<bus>` directory: one PCIe host bridge (root complex). */
  readonly rootComplex: string;
  /** The functions between the root complex and the device, top first (root port, switch ports). */
  readonly bridges: readonly string[];
  /** sysfs `numa_node`; absent when it reads -1 (unknown) or cannot be read. */
  readonly numaNode?: number;
}

/** A place, or why the device has none. */
export type Placement = PciPlace | { readonly unplaced: string };

export interface LocalityPair {
  /** The GPU's bus id in the normal form (`0000:5b:00.0`). */
  readonly gpu: string;
  readonly hca: string;
  readonly relation: Relation;
}

export interface Locality {
  readonly gpus: ReadonlyMap<string, Placement>;
  readonly hcas: ReadonlyMap<string, Placement>;
  /** One per (GPU, HCA) where both have a place: GPUs in the order given, then HCAs. */
  readonly pairs: readonly LocalityPair[];
}

/** Keeps the last reading; reads again only when the set of GPUs or HCAs changes (or it had problems). */
export class LocalityCache {
  /** How many times sysfs was read: a steady node reads once. */
  reads = 0;
  stamp?: string;
  locality?: Locality;
}

export function isPlaced(p: Placement | undefined): p is PciPlace {
  return p !== undefined && 'busId' in p;
}

/** Reads the places of the given GPUs (by bus id) and HCAs (by name) and relates every pair. */
export function readLocality(
  sysfs: string,
  gpuBusIds: readonly string[],
  hcaNames: readonly string[],
  problems: Problems,
  cache?: LocalityCache,
): Locality {
  const stamp = JSON.stringify([gpuBusIds, hcaNames]);
  if (cache?.locality && cache.stamp === stamp) return cache.locality;
  const before = problems.total();
  const top = realDir(join(sysfs, 'devices'));
  const place = (link: string): Placement =>
    top === undefined ? { unplaced: `${join(sysfs, 'devices')} does not exist` } : placeOf(link, top, problems);
  const gpus = new Map(gpuBusIds.map((b) => [b, place(join(sysfs, 'bus', 'pci', 'devices', b))] as const));
  const hcas = new Map(hcaNames.map((h) => [h, place(join(sysfs, 'class', 'infiniband', h, 'device'))] as const));
  const pairs: LocalityPair[] = [];
  for (const [gpu, g] of gpus)
    for (const [hca, h] of hcas) if (isPlaced(g) && isPlaced(h)) pairs.push({ gpu, hca, relation: relation(g, h) });
  const locality = { gpus, hcas, pairs };
  if (cache) {
    cache.reads++;
    // Kept only when clean: a device whose files failed is read again next cycle.
    cache.stamp = problems.total() === before ? stamp : undefined;
    cache.locality = locality;
  }
  return locality;
}

function realDir(p: string): string | undefined {
  try {
    return fs.realpathSync(p);
  } catch {
    return undefined;
  }
}

const ROOT_COMPLEX_RE = /^pci[0-9a-f]{4}:[0-9a-f]{2}$/;
const FUNCTION_RE = /^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$/;

/** The place of the PCI function a sysfs link leads to. */
export function placeOf(link: string, devicesDir: string, problems: Problems): Placement {
  let real: string;
  try {
    real = fs.realpathSync(link);
  } catch (err) {
    const kind = classify(err);
    const why = `${link}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`;
    if (kind !== 'gone') problems.add('sysfs', kind, why);
    return { unplaced: kind === 'gone' ? `${link} does not exist (no PCI function)` : why };
  }
  const chain = parseChain(real, devicesDir);
  if (typeof chain === 'string') return { unplaced: `${link} → ${real}: ${chain}` };
  const numa = readNuma(join(real, 'numa_node'), problems);
  const [rootComplex, ...below] = chain as [string, ...string[]];
  return {
    busId: below[below.length - 1] as string,
    rootComplex,
    bridges: below.slice(0, -1),
    ...(numa === undefined ? {} : { numaNode: numa }),
  };
}

/** `…/devices/pci0000:56/0000:56:01.0/…/0000:5b:00.0` → its components, or why it is no PCI chain. */
export function parseChain(real: string, devicesDir: string): string[] | string {
  if (!real.startsWith(devicesDir + '/')) return 'not under devices/';
  const parts = real.slice(devicesDir.length + 1).split('/');
  if (!ROOT_COMPLEX_RE.test(parts[0] ?? '')) return 'not under a PCI root complex (devices/pci<domain>:<bus>)';
  const bad = parts.slice(1).find((p) => !FUNCTION_RE.test(p));
  if (bad !== undefined) return `${JSON.stringify(bad.slice(0, 40))} is not a PCI function`;
  return parts.length < 2 ? 'a root complex, not a device' : parts;
}

function readNuma(file: string, problems: Problems): number | undefined {
  const r = readSmall(file);
  if (!r.ok) {
    if (r.kind !== 'gone') problems.add('sysfs', r.kind, r.detail);
    return undefined;
  }
  const t = r.value.trim();
  if (!/^-?\d{1,4}$/.test(t)) {
    problems.add('sysfs', 'malformed', `${file}: ${JSON.stringify(t.slice(0, 20))}`);
    return undefined;
  }
  const n = Number(t);
  return n < 0 ? undefined : n;
}

/** The switches above a device, each named by its upstream port: the 2nd, 4th, … bridge of the chain. */
function switches(bridges: readonly string[]): string[] {
  return bridges.filter((_, i) => i % 2 === 1);
}

/** The relation of two placed devices, as nvidia-smi topo -m names it (the rules in the header). */
export function relation(a: PciPlace, b: PciPlace): Relation {
  if (a.rootComplex !== b.rootComplex) {
    if (a.numaNode === undefined || b.numaNode === undefined) return 'unknown';
    return a.numaNode === b.numaNode ? 'NODE' : 'SYS';
  }
  const sa = switches(a.bridges);
  const sb = switches(b.bridges);
  let common = 0;
  while (common < sa.length && common < sb.length && sa[common] === sb[common]) common++;
  if (common === 0) return 'PHB';
  const crossed = sa.length - common + (sb.length - common) + 1;
  return crossed === 1 ? 'PIX' : 'PXB';
}
