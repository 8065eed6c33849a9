/**
 * The rdma cgroup controller's charges (`rdma.current`): which HCAs a cgroup
 * holds, told by the kernel, with no fd table read.
 *
 * Every verbs context (ibv_open_device) charges one `hca_handle`, every verbs
 * object (QP, CQ, MR, PD …) one `hca_object`, to the cgroup of the task that
 * created it and to all its ancestors; the charge stays there if the task
 * migrates. Each non-root cgroup with the controller lists every registered
 * RDMA device, zeros included: `mlx5_0 hca_handle=1 hca_object=20 `. The root
 * cgroup has no such file, nor has a cgroup whose parent does not enable the
 * controller: a missing or unparsable file is "no evidence", never zero.
 * The file is read as UTF-8, as sysfs names are, and only the devices sysfs
 * lists count: a name it lacks (a device gone, or a file that lies) is no
 * HCA and makes no series.
 */
import type { Problems } from './problems.js';
import { join, LIST_LIMIT, listDir, listSubdirs, readSmall } from './roots.js';
import { failed, ok, type Read } from './result.js';
import { cgroupLines, RDMA_CURRENT, type CgroupLine } from './cgroups.js';

export interface RdmaCharge {
  readonly handles: number;
  readonly objects: number;
}

/** Device name → what the cgroup (and its descendants) holds on it. */
export type RdmaCurrent = ReadonlyMap<string, RdmaCharge>;

/** Where the charges were read, and what they say. */
export interface RdmaEvidence {
  readonly file: string;
  readonly charges: RdmaCurrent;
}

const DIGITS = /^\d{1,15}$/;

/** Parses `rdma.current`; any line that is not `<device> hca_handle=N hca_object=M` makes the whole file malformed. */
export function parseRdmaCurrent(text: string): Read<RdmaCurrent> {
  const out = new Map<string, RdmaCharge>();
  for (const line of text.split('\n')) {
    const words = line.split(/[ \t]+/).filter((w) => w !== '');
    if (words.length === 0) continue;
    const fields = new Map<string, number>();
    for (const w of words.slice(1)) {
      const eq = w.indexOf('=');
      const value = w.slice(eq + 1);
      if (eq <= 0 || !DIGITS.test(value)) return failed('malformed', `line ${JSON.stringify(line.slice(0, 80))}`);
      fields.set(w.slice(0, eq), Number(value));
    }
    const handles = fields.get('hca_handle');
    const objects = fields.get('hca_object');
    if (handles === undefined || objects === undefined)
      return failed('malformed', `line ${JSON.stringify(line.slice(0, 80))} lacks hca_handle or hca_object`);
    out.set(words[0] as string, { handles, objects });
  }
  return ok(out);
}

/** HCA names sysfs lists; undefined: sysfs could not say, every name is kept. */
export type ListedDevices = ReadonlySet<string> | undefined;

/**
 * The HCA names sysfs lists (`class/infiniband/`), as readdir decodes them (UTF-8); undefined
 * when the class directory cannot be listed (then readHcas fails the cycle).
 */
export function listedDevices(sysfs: string): ListedDevices {
  const names = listDir(join(sysfs, 'class', 'infiniband'));
  if (names.ok) return new Set(names.value);
  return names.kind === 'gone' ? new Set() : undefined;
}

/** The charges of one cgroup directory; undefined (no evidence) when the file is missing, unreadable or malformed. */
export function readRdmaCurrent(dir: string, problems: Problems, devices?: ListedDevices): RdmaEvidence | undefined {
  return firstRdmaCurrent([dir], problems, devices);
}

/**
 * The directories that may hold a process's own `rdma.current`, from its
 * /proc/<pid>/cgroup lines: the v1 line whose controllers include rdma
 * (mounted at <cgroupfs>/<controllers>), then the v2 line (the root of a
 * unified host, or <cgroupfs>/unified on a hybrid one). The root cgroup has
 * no charges file: it gives none.
 */
export function processCgroupDirs(cgroupfs: string, lines: readonly CgroupLine[]): string[] {
  const usable = lines.filter((l) => l.path.startsWith('/') && l.path !== '/' && !l.path.split('/').includes('..'));
  const v1 = usable
    .filter((l) => l.controllers.split(',').includes('rdma'))
    .map((l) => join(cgroupfs, l.controllers, l.path));
  const v2 = usable
    .filter((l) => l.controllers === '')
    .flatMap((l) => [join(cgroupfs, l.path), join(cgroupfs, 'unified', l.path)]);
  return [...v1, ...v2];
}

/** The first charges file found among `dirs`: a malformed or unreadable one is no evidence, and counted. */
export function firstRdmaCurrent(
  dirs: readonly string[],
  problems: Problems,
  devices?: ListedDevices,
): RdmaEvidence | undefined {
  for (const dir of dirs) {
    const file = join(dir, RDMA_CURRENT);
    const r = readSmall(file, { utf8: true });
    if (!r.ok && r.kind === 'gone') continue;
    const parsed = r.ok ? parseRdmaCurrent(r.value) : r;
    if (parsed.ok) return { file, charges: listedOnly(parsed.value, devices) };
    problems.add('cgroup', parsed.kind, r.ok ? `${file}: ${parsed.detail}` : parsed.detail);
    return undefined;
  }
  return undefined;
}

function listedOnly(charges: RdmaCurrent, devices: ListedDevices): RdmaCurrent {
  if (devices === undefined) return charges;
  return new Map([...charges].filter(([d]) => devices.has(d)));
}

/** Devices with at least one verbs context charged. */
export function chargedDevices(charges: RdmaCurrent): string[] {
  return [...charges].filter(([, c]) => c.handles > 0).map(([d]) => d);
}

/**
 * Whether the rdma controller exists on this host at all (v2: listed in the
 * root's cgroup.controllers, on a hybrid host in unified/; v1: a mounted rdma
 * hierarchy). Without it no cgroup can have rdma.current, and no process is
 * looked up.
 */
export function rdmaControllerPresent(cgroupfs: string): boolean {
  for (const file of [join(cgroupfs, 'cgroup.controllers'), join(cgroupfs, 'unified', 'cgroup.controllers')]) {
    const r = readSmall(file);
    if (r.ok && r.value.split(/\s+/).includes('rdma')) return true;
  }
  const subs = listSubdirs(cgroupfs);
  return subs.ok && subs.value.some((name) => name.split(',').includes('rdma'));
}

/** The charges of processes' own cgroups, read once per cgroup per cycle. */
export class ProcessCharges {
  private readonly byDirs = new Map<string, RdmaEvidence | undefined>();
  private readonly byPid = new Map<number, RdmaEvidence | undefined>();

  /** `known`: PID → its own cgroup directory where the job cgroup scan already found it. */
  constructor(
    private readonly procfs: string,
    private readonly cgroupfs: string,
    private readonly problems: Problems,
    private readonly known: ReadonlyMap<number, string> = new Map(),
    private readonly devices?: ListedDevices,
  ) {}

  /** From the job cgroup scan, else /proc/<pid>/cgroup; undefined when unknown or the cgroup has no rdma.current. */
  of(pid: number): RdmaEvidence | undefined {
    if (this.byPid.has(pid)) return this.byPid.get(pid);
    const dir = this.known.get(pid);
    const cg =
      dir === undefined ? readSmall(join(this.procfs, String(pid), 'cgroup'), { limit: LIST_LIMIT }) : undefined;
    const e = dir !== undefined ? this.ofDirs([dir]) : cg?.ok ? this.ofLines(cgroupLines(cg.value)) : undefined;
    this.byPid.set(pid, e);
    return e;
  }

  ofLines(lines: readonly CgroupLine[]): RdmaEvidence | undefined {
    return this.ofDirs(processCgroupDirs(this.cgroupfs, lines));
  }

  private ofDirs(dirs: readonly string[]): RdmaEvidence | undefined {
    const key = dirs.join('\0');
    if (this.byDirs.has(key)) return this.byDirs.get(key);
    const e = firstRdmaCurrent(dirs, this.problems, this.devices);
    this.byDirs.set(key, e);
    return e;
  }
}
