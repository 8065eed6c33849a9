/**
 * NVIDIA GPU inventory from the driver's procfs files, without NVML: which device numbers name
 * which GPU (or MIG instance), and which name none. A pure reader: the fd walk matches the device
 * numbers of job processes' fds against `byDevice`.
 *
 * What the driver writes, as verified:
 * - `driver/nvidia/gpus/<bus id>/information`: `Label:<tabs> value` lines; `GPU UUID`, `Bus Location`
 *   (`0000:00:06.0`: 4-digit domain, lower case), `Device Minor`, `Model`, `GPU Excluded` (`Yes`/`No`).
 *   Recorded on a real H200 (fixtures/node/nvidia/h200).
 * - `/dev/nvidia<minor>` is 195:<minor>; 195:255 is nvidiactl and 195:254 nvidia-modeset (the major
 *   and both minors are fixed in NVIDIA's container library); nvidia-uvm, nvidia-caps and the rest
 *   get dynamic majors, read from `/proc/devices`.
 * - `driver/nvidia/capabilities/gpu<minor>/mig/gi<G>/access` and `…/gi<G>/ci<C>/access`: one file per
 *   existing GPU instance and compute instance, naming the `nvidia-caps` minor that grants it, as
 *   the driver writes it: `DeviceFileMinor: N`, `DeviceFileMode: M`, `DeviceFileModify: 0|1` lines.
 *   `<minor>` is the GPU's device minor (NVIDIA's container library builds the path from it).
 *   `capabilities/mig/config`, `mig/monitor` and `fabric-imex-mgmt` are node-wide capabilities in
 *   the same format: a CUDA process opens config and monitor with MIG off (the H200 recording: fds
 *   on 241:1 and 241:2), so they name no GPU. Verified against the driver's own nv-caps.c and the
 *   container library's MIG paths, both in NVIDIA's public repositories.
 * - Bus ids as NVML prints them (nvidia-smi, DCGM exporter's `pci_bus_id`): 8-digit domain, hex
 *   digits in upper case (`00000000:3F:00.0`); the H200 recording shows `00000000:00:06.0`.
 */
import fs from 'node:fs';
import type { Problems } from './problems.js';
import { join, listDir, listSubdirs, readSmall } from './roots.js';
import { classify, failed, type Failure } from './result.js';

/** The character-device major of GPUs, nvidiactl and nvidia-modeset: fixed by the driver. */
export const NVIDIA_MAJOR = 195;
export const NVIDIACTL_MINOR = 255;
export const MODESET_MINOR = 254;

export interface ComputeInstance {
  readonly ci: number;
  /** The `nvidia-caps` minor that grants this compute instance. */
  readonly capsMinor: number;
  /** `<nvidia-caps major>:<capsMinor>`; absent when /proc/devices names no nvidia-caps major. */
  readonly device?: string;
}

export interface GpuInstance {
  readonly gi: number;
  readonly capsMinor: number;
  readonly device?: string;
  readonly computeInstances: readonly ComputeInstance[];
}

export interface Gpu {
  /** `GPU-…` as the driver writes it (and NVML, nvidia-smi and DCGM print it). */
  readonly uuid: string;
  /** The normal form: as sysfs names PCI devices, `0000:00:06.0` (4-digit domain, lower case). */
  readonly busId: string;
  /** As NVML and DCGM exporter print it: `00000000:00:06.0` (8-digit domain, upper case). */
  readonly busIdDcgm: string;
  /** The driver's Device Minor: `/dev/nvidia<minor>`. */
  readonly minor: number;
  /** `195:<minor>`. */
  readonly device: string;
  readonly model?: string;
  /** The driver's `GPU Excluded`; absent when the file does not say (older drivers). */
  readonly excluded?: boolean;
  /** MIG GPU instances that exist now (none with MIG off). */
  readonly gpuInstances: readonly GpuInstance[];
}

/** What one device number is to the driver. */
export type DeviceRole =
  | { readonly kind: 'gpu'; readonly gpu: Gpu }
  | { readonly kind: 'gpu-instance'; readonly gpu: Gpu; readonly gpuInstance: GpuInstance }
  | {
      readonly kind: 'compute-instance';
      readonly gpu: Gpu;
      readonly gpuInstance: GpuInstance;
      readonly computeInstance: ComputeInstance;
    }
  /** nvidiactl, nvidia-modeset, nvidia-uvm*, node-wide caps (mig/config, …), nvswitch, nvlink, IMEX. */
  | { readonly kind: 'no-gpu'; readonly name: string }
  /** On an NVIDIA major but not in this inventory (a GPU or instance that came after the reading). */
  | { readonly kind: 'unknown'; readonly name: string };

export interface NvidiaMajors {
  readonly nvidia: number;
  readonly caps?: number;
  /** Majors whose every device names no GPU, by driver name (nvidia-uvm, nvidia-nvswitch, …). */
  readonly noGpu: ReadonlyMap<number, string>;
}

export interface GpuInventory {
  /** False when the node has no NVIDIA driver loaded: then `reason` says so in one line. */
  readonly present: boolean;
  readonly reason?: string;
  /** Why this reading cannot stand for the node (the driver's directory unlistable). */
  readonly failure?: string;
  readonly gpus: readonly Gpu[];
  readonly majors: NvidiaMajors;
  /** Every device number the driver's files name: GPUs, MIG instances and those naming no GPU. */
  readonly byDevice: ReadonlyMap<string, DeviceRole>;
}

/** Keeps the last inventory; parses again only when the listing of the driver's files changes. */
export class GpuCache {
  /** How many times the driver's files were parsed: a steady node parses once. */
  parses = 0;
  stamp?: string;
  inventory?: GpuInventory;
}

/**
 * What decides whether to parse again: the driver directory's inode (a reload of the driver makes
 * new procfs entries), the GPU directories, the MIG instance directories and /proc/devices. These
 * are a few readdirs, where parsing reads a file per GPU and per instance.
 */
interface Listing {
  readonly ino: number;
  readonly gpuDirs: readonly string[];
  /** capabilities/gpu<N> → gi<G> → ci<C> names, sorted. */
  readonly caps: readonly { readonly gpu: string; readonly gis: readonly { gi: string; cis: string[] }[] }[];
  readonly devicesText: string;
}

const NO_DRIVER_MAJORS: NvidiaMajors = { nvidia: NVIDIA_MAJOR, noGpu: new Map() };

/**
 * The node's GPUs, MIG instances and NVIDIA device numbers. No driver is an empty inventory with a
 * reason, never an error; a file that cannot be read or parsed is counted in `problems` and leaves
 * out only what it describes. With a cache, the files are parsed again only when the listing changed
 * or the last parse had problems.
 */
export function readGpus(procfs: string, problems: Problems, cache?: GpuCache): GpuInventory {
  const driverDir = join(procfs, 'driver', 'nvidia');
  const st = statDir(driverDir);
  if (st === 'gone') return absent(`no NVIDIA driver loaded (${driverDir} does not exist): no GPU on this node`);
  if (typeof st !== 'number') {
    problems.add('proc', st.kind, st.detail);
    return { ...absent(`cannot read ${driverDir}: ${st.detail}`), failure: st.detail };
  }
  const listing = list(procfs, driverDir, st, problems);
  if (typeof listing === 'string') return { ...absent(listing), present: true, failure: listing };
  const stamp = JSON.stringify(listing);
  if (cache?.inventory && cache.stamp === stamp) return cache.inventory;
  const before = problems.total();
  const inventory = parse(driverDir, listing, problems);
  if (cache) {
    cache.parses++;
    // Kept only when clean: a file that failed is read again next cycle.
    cache.stamp = problems.total() === before ? stamp : undefined;
    cache.inventory = inventory;
  }
  return inventory;
}

function absent(reason: string): GpuInventory {
  return { present: false, reason, gpus: [], majors: NO_DRIVER_MAJORS, byDevice: new Map() };
}

/** The directory's inode, `gone` when it does not exist, or why it cannot be read. */
function statDir(p: string): number | 'gone' | Failure {
  try {
    const st = fs.statSync(p);
    return st.isDirectory() ? st.ino : failed('malformed', `${p}: not a directory`);
  } catch (err) {
    const kind = classify(err);
    return kind === 'gone' ? 'gone' : failed(kind, `${p}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`);
  }
}

const GPU_CAPS_RE = /^gpu(\d{1,3})$/;
const GI_RE = /^gi(\d{1,2})$/;
const CI_RE = /^ci(\d{1,2})$/;

/** The listing, or why the GPU directory cannot be listed. */
function list(procfs: string, driverDir: string, ino: number, problems: Problems): Listing | string {
  const gpus = listDir(join(driverDir, 'gpus'));
  if (!gpus.ok && gpus.kind !== 'gone') {
    problems.add('proc', gpus.kind, gpus.detail);
    return `cannot list ${join(driverDir, 'gpus')}: ${gpus.detail}`;
  }
  const devices = readSmall(join(procfs, 'devices'), { limit: 65536 });
  if (!devices.ok) problems.add('proc', devices.kind, devices.detail);
  return {
    ino,
    gpuDirs: gpus.ok ? gpus.value.sort() : [],
    caps: listCaps(join(driverDir, 'capabilities'), problems),
    devicesText: devices.ok ? devices.value : '',
  };
}

function listCaps(capsDir: string, problems: Problems): Listing['caps'] {
  const out: { gpu: string; gis: { gi: string; cis: string[] }[] }[] = [];
  for (const gpu of subdirs(capsDir, problems)
    .filter((n) => GPU_CAPS_RE.test(n))
    .sort()) {
    const migDir = join(capsDir, gpu, 'mig');
    const gis = subdirs(migDir, problems)
      .filter((n) => GI_RE.test(n))
      .sort()
      .map((gi) => ({
        gi,
        cis: subdirs(join(migDir, gi), problems)
          .filter((n) => CI_RE.test(n))
          .sort(),
      }));
    out.push({ gpu, gis });
  }
  return out;
}

function subdirs(p: string, problems: Problems): string[] {
  const r = listSubdirs(p);
  if (r.ok) return r.value;
  if (r.kind !== 'gone') problems.add('proc', r.kind, r.detail);
  return [];
}

function parse(driverDir: string, listing: Listing, problems: Problems): GpuInventory {
  const majors = parseMajors(listing.devicesText);
  const gpus: Gpu[] = [];
  for (const dir of listing.gpuDirs) {
    const gpu = readGpu(join(driverDir, 'gpus', dir), dir, majors.nvidia, problems);
    if (gpu) gpus.push(gpu);
  }
  const withMig = attachMig(gpus, join(driverDir, 'capabilities'), listing.caps, majors, problems);
  withMig.sort((a, b) => a.minor - b.minor);
  return { present: true, gpus: withMig, majors, byDevice: roles(withMig, driverDir, majors, problems) };
}

/** Driver names in /proc/devices whose every device names no GPU. */
const NO_GPU_DRIVERS = new Set(['nvidia-uvm', 'nvidia-nvswitch', 'nvidia-nvlink', 'nvidia-caps-imex-channels']);

/** Majors from /proc/devices' `Character devices:` section (`<major> <name>` lines). */
export function parseMajors(text: string): NvidiaMajors {
  let nvidia = NVIDIA_MAJOR;
  let caps: number | undefined;
  const noGpu = new Map<number, string>();
  let inChar = false;
  for (const line of text.split('\n')) {
    if (/^Character devices:/.test(line)) inChar = true;
    else if (/^Block devices:/.test(line)) inChar = false;
    const m = inChar ? /^\s*(\d{1,4}) (\S+)$/.exec(line) : null;
    if (!m) continue;
    const major = Number(m[1]);
    const name = m[2] as string;
    // `nvidia-frontend` on drivers that split the device into a frontend and per-GPU modules.
    if (name === 'nvidia' || name === 'nvidia-frontend') nvidia = major;
    else if (name === 'nvidia-caps') caps = major;
    else if (NO_GPU_DRIVERS.has(name)) noGpu.set(major, name);
  }
  return caps === undefined ? { nvidia, noGpu } : { nvidia, caps, noGpu };
}

function readGpu(dir: string, name: string, major: number, problems: Problems): Gpu | undefined {
  const file = join(dir, 'information');
  const r = readSmall(file, { utf8: true });
  if (!r.ok) {
    if (r.kind !== 'gone') problems.add('proc', r.kind, r.detail);
    return undefined;
  }
  const parsed = parseInformation(r.value, name, major);
  if (typeof parsed === 'string') {
    problems.add('proc', 'malformed', `${file}: ${parsed}`);
    return undefined;
  }
  return parsed;
}

const UUID_RE = /^GPU-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * A GPU from its `information` file; `dirName` (the driver names the directory after the bus id)
 * stands in when `Bus Location` is missing. A string says what is wrong.
 */
export function parseInformation(text: string, dirName: string, major = NVIDIA_MAJOR): Gpu | string {
  const fields = new Map<string, string>();
  for (const line of text.split('\n')) {
    const at = line.indexOf(':');
    if (at > 0) fields.set(line.slice(0, at).trim(), line.slice(at + 1).trim());
  }
  const uuid = fields.get('GPU UUID');
  if (uuid === undefined || !UUID_RE.test(uuid)) return `GPU UUID ${JSON.stringify(uuid?.slice(0, 60))}`;
  const minorText = fields.get('Device Minor') ?? '';
  const minor = /^\d{1,3}$/.test(minorText) ? Number(minorText) : NaN;
  if (!(minor < MODESET_MINOR)) return `Device Minor ${JSON.stringify(minorText.slice(0, 20))}`;
  const bus = parseBusId(fields.get('Bus Location') ?? dirName);
  if (bus === undefined) return `Bus Location ${JSON.stringify(fields.get('Bus Location')?.slice(0, 40))}`;
  const excludedText = fields.get('GPU Excluded');
  const model = fields.get('Model');
  return {
    uuid,
    ...bus,
    minor,
    device: `${major}:${minor}`,
    ...(model ? { model } : {}),
    ...(excludedText === 'Yes' || excludedText === 'No' ? { excluded: excludedText === 'Yes' } : {}),
    gpuInstances: [],
  };
}

const BUS_RE = /^([0-9a-f]{4,8}):([0-9a-f]{2}):([0-9a-f]{2})\.([0-7])$/i;

/** A PCI bus id in any of its written forms → the normal form and NVML's (DCGM's). */
export function parseBusId(text: string): { busId: string; busIdDcgm: string } | undefined {
  const m = BUS_RE.exec(text.trim());
  if (!m) return undefined;
  const [, domain, bus, device, fn] = m as unknown as [string, string, string, string, string];
  const d = parseInt(domain, 16);
  const busId = `${d.toString(16).padStart(4, '0')}:${bus}:${device}.${fn}`.toLowerCase();
  const busIdDcgm = `${d.toString(16).padStart(8, '0')}:${bus}:${device}.${fn}`.toUpperCase();
  return { busId, busIdDcgm };
}

/** The `DeviceFileMinor` of a capability file, or what is wrong with it. */
export function parseCapability(text: string): number | string {
  const m = /^DeviceFileMinor: (\d{1,7})$/m.exec(text);
  return m ? Number(m[1]) : `no DeviceFileMinor in ${JSON.stringify(text.slice(0, 60))}`;
}

/** Reads one capability file: its minor, or undefined (counted unless it vanished). */
function readCapability(file: string, problems: Problems): number | undefined {
  const r = readSmall(file);
  if (!r.ok) {
    if (r.kind !== 'gone') problems.add('proc', r.kind, r.detail);
    return undefined;
  }
  const minor = parseCapability(r.value);
  if (typeof minor === 'number') return minor;
  problems.add('proc', 'malformed', `${file}: ${minor}`);
  return undefined;
}

function capsDevice(majors: NvidiaMajors, minor: number): { device?: string } {
  return majors.caps === undefined ? {} : { device: `${majors.caps}:${minor}` };
}

/** The GPUs with their MIG instances from `capabilities/gpu<minor>/mig/…`. */
function attachMig(
  gpus: readonly Gpu[],
  capsDir: string,
  caps: Listing['caps'],
  majors: NvidiaMajors,
  problems: Problems,
): Gpu[] {
  const byMinor = new Map(gpus.map((g) => [g.minor, g]));
  const out = new Map(gpus.map((g) => [g.minor, g]));
  for (const { gpu: gpuDir, gis } of caps) {
    if (gis.length === 0) continue;
    const minor = Number(GPU_CAPS_RE.exec(gpuDir)?.[1]);
    const gpu = byMinor.get(minor);
    if (!gpu) {
      problems.add('proc', 'malformed', `${join(capsDir, gpuDir)}: MIG instances of a GPU with no information file`);
      continue;
    }
    const instances: GpuInstance[] = [];
    for (const { gi, cis } of gis) {
      const dir = join(capsDir, gpuDir, 'mig', gi);
      const giMinor = readCapability(join(dir, 'access'), problems);
      if (giMinor === undefined) continue;
      const computeInstances: ComputeInstance[] = [];
      for (const ci of cis) {
        const ciMinor = readCapability(join(dir, ci, 'access'), problems);
        if (ciMinor !== undefined)
          computeInstances.push({ ci: Number(ci.slice(2)), capsMinor: ciMinor, ...capsDevice(majors, ciMinor) });
      }
      computeInstances.sort((a, b) => a.ci - b.ci);
      instances.push({ gi: Number(gi.slice(2)), capsMinor: giMinor, ...capsDevice(majors, giMinor), computeInstances });
    }
    instances.sort((a, b) => a.gi - b.gi);
    out.set(minor, { ...gpu, gpuInstances: instances });
  }
  return [...out.values()];
}

/** Node-wide capabilities: granted to any process (CUDA opens mig/config and mig/monitor), no GPU. */
const NODE_CAPS = ['mig/config', 'mig/monitor', 'fabric-imex-mgmt'];

function roles(
  gpus: readonly Gpu[],
  driverDir: string,
  majors: NvidiaMajors,
  problems: Problems,
): Map<string, DeviceRole> {
  const out = new Map<string, DeviceRole>();
  out.set(`${majors.nvidia}:${NVIDIACTL_MINOR}`, { kind: 'no-gpu', name: 'nvidiactl' });
  out.set(`${majors.nvidia}:${MODESET_MINOR}`, { kind: 'no-gpu', name: 'nvidia-modeset' });
  if (majors.caps !== undefined)
    for (const name of NODE_CAPS) {
      const minor = readCapability(join(driverDir, 'capabilities', name), problems);
      if (minor !== undefined) out.set(`${majors.caps}:${minor}`, { kind: 'no-gpu', name: `nvidia-caps ${name}` });
    }
  for (const gpu of gpus) {
    out.set(`${majors.nvidia}:${gpu.minor}`, { kind: 'gpu', gpu });
    for (const gpuInstance of gpu.gpuInstances) {
      if (gpuInstance.device) out.set(gpuInstance.device, { kind: 'gpu-instance', gpu, gpuInstance });
      for (const computeInstance of gpuInstance.computeInstances)
        if (computeInstance.device)
          out.set(computeInstance.device, { kind: 'compute-instance', gpu, gpuInstance, computeInstance });
    }
  }
  return out;
}

/**
 * What a job can hold of a GPU, the unit attribution judges: the whole GPU with MIG off, each
 * compute instance with MIG on (a process on a MIG instance holds the GPU's own node too, and that
 * says nothing of which instance it runs on: only the instance's capability node does).
 */
export interface GpuUnit {
  /** `gpu:<uuid>` or `gpu:<uuid>/<gi>/<ci>`: the holder key of the fd walk. */
  readonly key: string;
  readonly gpu: Gpu;
  readonly gi?: number;
  readonly ci?: number;
}

/** The key prefix that tells a GPU unit from a uverbs device among the fd walk's holders. */
export const GPU_KEY_PREFIX = 'gpu:';

/** The units of the inventory, and which device number makes a process a holder of which unit. */
export function gpuUnits(inv: GpuInventory): { units: GpuUnit[]; byDevice: Map<string, string> } {
  const units: GpuUnit[] = [];
  const byDevice = new Map<string, string>();
  for (const gpu of inv.gpus) {
    if (gpu.excluded === true) continue;
    if (gpu.gpuInstances.length === 0) {
      units.push({ key: `${GPU_KEY_PREFIX}${gpu.uuid}`, gpu });
      byDevice.set(gpu.device, `${GPU_KEY_PREFIX}${gpu.uuid}`);
      continue;
    }
    for (const gi of gpu.gpuInstances)
      for (const ci of gi.computeInstances) {
        const key = `${GPU_KEY_PREFIX}${gpu.uuid}/${gi.gi}/${ci.ci}`;
        units.push({ key, gpu, gi: gi.gi, ci: ci.ci });
        if (ci.device !== undefined) byDevice.set(ci.device, key);
      }
  }
  return { units, byDevice };
}
