/**
 * Which filesystem an fd refers into, and whether asking that filesystem about it is safe.
 *
 * stat of `/proc/<pid>/fd/<N>` runs the getattr of the filesystem the fd's file lives on. For a
 * job file on Lustre, GPFS, NFS or a FUSE mount that can wait for a server forever (a hard NFS
 * mount whose server is down, a FUSE daemon that never answers) or fail (EACCES from a user's own
 * FUSE mount, which refuses root; ESTALE or EIO after a fail-over). A stacked filesystem (overlay)
 * passes the getattr on to the layer below, which may be any of those: an unprivileged user can
 * stack an overlay on a FUSE daemon of their own inside a user namespace. So the device number of
 * an fd is asked on the event loop only where the answer comes from memory or a local disk:
 *
 * - `/proc/<pid>/fdinfo/<N>` names the fd's mount (`mnt_id`) without touching the file: procfs
 *   prints it from the open file itself (as it does the link text, read with readlink);
 * - `/proc/<pid>/mountinfo` gives that mount's filesystem type and options; mount ids are unique
 *   on the machine while the mount exists (an open fd keeps its mount alive), so one table per
 *   cycle serves every process, filled from a process's own mountinfo when it names a mount not
 *   seen yet (another mount namespace: a container);
 * - only fds on a local filesystem (`LOCAL_TYPES`: devtmpfs, tmpfs, the local disk filesystems)
 *   are stat'ed. Device nodes live there: the host's /dev is devtmpfs, a container's /dev tmpfs,
 *   a chroot's a directory on a local disk or a bind of the host's;
 * - and each file once a cycle: fdinfo also names the fd's inode (`ino`, kernels from 5.14), and
 *   an inode number names one file of a mount at a time, so the answer for one fd serves every fd
 *   on that file (a user's million fds on /dev/null cost one stat, not a million). Not on btrfs,
 *   whose subvolumes, which any user may create, number their inodes each from the start under
 *   one mount. A number reused within the cycle by another file: only root makes device nodes,
 *   so a user's new file takes the answer of a device only where root removed one meanwhile (a
 *   holder too many, never one missed from a user's doing).
 *
 * An fd on any other filesystem is not a device the agent can see, and not a reason to distrust
 * the process: a job's files are no evidence of anything. One exception keeps the agent on the
 * safe side: an fd whose path ends in `uverbs<N>` on such a filesystem, on a mount that allows
 * device nodes, may be a verbs device node. It is asked in a child process with a deadline
 * (fd-probe.ts), never on the event loop; until that answers, or when it cannot, the process is
 * counted as one whose fds could not all be read (`uncertain`).
 */
import fs from 'node:fs';
import { deviceNumber, LIST_LIMIT, readSmall } from './roots.js';

/** Filesystems whose getattr answers from memory or a local block device, never from a server or a daemon. */
export const LOCAL_TYPES: ReadonlySet<string> = new Set([
  'devtmpfs',
  'tmpfs',
  'ramfs',
  'devpts',
  'ext2',
  'ext3',
  'ext4',
  'xfs',
  'btrfs',
  'f2fs',
  'zfs',
  'squashfs',
  'erofs',
]);

/** One line of mountinfo, as far as the agent needs it. */
export interface MountClass {
  readonly fstype: string;
  /** Device nodes on it cannot be opened as devices (`nodev`). */
  readonly nodev: boolean;
  /** The superblock's device (`0:52`): with the mount id, names the mount for as long as it exists. */
  readonly dev: string;
}

/**
 * Mount id → filesystem type and `nodev`, from mountinfo text (`36 35 98:0 /mnt1 /mnt2 rw,noatime
 * master:1 - ext3 /dev/root rw,errors=continue`: id first, options sixth, type after the `-`).
 */
export function parseMountInfo(text: string): Map<number, MountClass> {
  const out = new Map<number, MountClass>();
  for (const line of text.split('\n')) {
    const fields = line.split(' ');
    const sep = fields.indexOf('-', 6);
    const id = Number(fields[0]);
    const fstype = fields[sep + 1];
    if (sep < 0 || !Number.isInteger(id) || fstype === undefined) continue;
    out.set(id, { fstype, nodev: (fields[5] ?? '').split(',').includes('nodev'), dev: fields[2] ?? '' });
  }
  return out;
}

/** The `mnt_id:` of fdinfo text (`pos:\t0\nflags:\t02\nmnt_id:\t26\n…`); undefined when absent. */
export function fdInfoMountId(text: string): number | undefined {
  const m = /(?:^|\n)mnt_id:\s*(\d{1,10})\s/.exec(text);
  return m ? Number(m[1]) : undefined;
}

/** The `ino:` of fdinfo text (`…mnt_id:\t26\nino:\t5\n`), as written; undefined when absent. */
export function fdInfoInode(text: string): string | undefined {
  return /(?:^|\n)ino:\s*(\d{1,20})\s/.exec(text)?.[1];
}

/** Local filesystems whose inode numbers are unique under one mount (btrfs's subvolumes each start anew). */
const ONE_INODE_SPACE: ReadonlySet<string> = new Set([...LOCAL_TYPES].filter((t) => t !== 'btrfs'));

/** The most files whose answer one cycle keeps (inodes of ONE_INODE_SPACE mounts). */
export const MAX_FILES_KNOWN = 16_384;

/**
 * A path whose last part names a device node of a class the agent attributes: a verbs device
 * (`…/uverbs3`), a GPU (`…/nvidia0`) or an NVIDIA capability (`…/nvidia-cap12`: MIG instances);
 * also with ` (deleted)` after an unlink.
 */
const DEVICE_NAME = /(?:^|\/)(?:uverbs\d{1,5}|nvidia\d{1,3}|nvidia-cap\d{1,7})(?: \(deleted\))?$/;

/**
 * What is known of one fd: a character device's `major:minor`; `none` (not a character device,
 * or on a filesystem the agent does not ask and not named like a verbs device); `uncertain` (why
 * its device cannot be known); `ask`: named like a verbs device on a filesystem the agent does
 * not ask on the event loop (`ask` names the filesystem, `mount` the mount: fd-probe.ts); or
 * `missing`: named like a device, but the fd is a plain symlink to a path this host does not have
 * (procfs's fd links always reach their file, so the tree is a copy or a synthetic one).
 */
export type FdKind =
  | { readonly dev: string }
  | { readonly none: true }
  | { readonly uncertain: string }
  | { readonly ask: string; readonly mount: string }
  | { readonly missing: true };

const NONE: FdKind = { none: true };

export interface FdMountCounts {
  /** stats made of fds on a local filesystem (one a file and cycle where fdinfo names the inode). */
  stated: number;
  /** fds on a filesystem the agent never asks (network, FUSE, unknown). */
  skipped: number;
}

/** The real procfs's way of knowing the device of an fd without waiting on the fd's filesystem. */
export class FdMounts {
  private mounts = new Map<number, MountClass | undefined>();
  /** `<mount id> <inode>` → what its stat said, this cycle. */
  private files = new Map<string, FdKind>();
  private readonly fdinfoBuf = Buffer.allocUnsafe(256);
  readonly counts: FdMountCounts = { stated: 0, skipped: 0 };

  constructor(private readonly procfs: string) {}

  /** A new cycle: mounts may have come and gone (and ids be reused). */
  begin(): void {
    this.mounts = new Map();
    this.files = new Map();
    this.counts.stated = 0;
    this.counts.skipped = 0;
  }

  /**
   * The fd `fd` of `pid`, whose link text is `link` (a path). Throws as `fs` does when procfs
   * refuses (EACCES: the fd table is unreadable) or the fd closed meanwhile (ENOENT).
   */
  kind(pid: number, fd: string, link: string): FdKind {
    const info = this.fdInfo(pid, fd);
    const id = fdInfoMountId(info);
    const mount = id === undefined ? undefined : this.mount(pid, id);
    if (mount !== undefined && LOCAL_TYPES.has(mount.fstype)) {
      const ino = ONE_INODE_SPACE.has(mount.fstype) ? fdInfoInode(info) : undefined;
      const key = ino === undefined ? undefined : `${id} ${ino}`;
      const known = key === undefined ? undefined : this.files.get(key);
      if (known !== undefined) return known;
      this.counts.stated++;
      const file = `${this.procfs}/${pid}/fd/${fd}`;
      const st = fs.statSync(file, { throwIfNoEntry: false });
      if (st === undefined) return DEVICE_NAME.test(link) && dangling(file) ? { missing: true } : NONE;
      const kind = st.isCharacterDevice() ? { dev: deviceNumber(st.rdev) } : NONE;
      if (key !== undefined && this.files.size < MAX_FILES_KNOWN) this.files.set(key, kind);
      return kind;
    }
    this.counts.skipped++;
    if (mount?.nodev === true || !DEVICE_NAME.test(link)) return NONE;
    return mount === undefined
      ? { ask: 'an unlisted mount', mount: `unlisted ${id ?? '?'}` }
      : { ask: mount.fstype, mount: `${id} ${mount.dev}` };
  }

  /** The fd's fdinfo text (its first 256 bytes: mnt_id and ino come before anything long). */
  private fdInfo(pid: number, fd: string): string {
    const f = fs.openSync(`${this.procfs}/${pid}/fdinfo/${fd}`, fs.constants.O_RDONLY);
    try {
      const n = fs.readSync(f, this.fdinfoBuf, 0, this.fdinfoBuf.length, 0);
      return this.fdinfoBuf.toString('latin1', 0, n);
    } finally {
      fs.closeSync(f);
    }
  }

  /** The mount `id` as the table knows it, else as `pid`'s own mountinfo lists it. */
  private mount(pid: number, id: number): MountClass | undefined {
    if (this.mounts.has(id)) return this.mounts.get(id);
    const text = readSmall(`${this.procfs}/${pid}/mountinfo`, { limit: LIST_LIMIT });
    if (text.ok) for (const [k, v] of parseMountInfo(text.value)) this.mounts.set(k, v);
    // Not listed (a mount detached by a lazy unmount, another namespace's): known as unknown.
    if (!this.mounts.has(id)) this.mounts.set(id, undefined);
    return this.mounts.get(id);
  }
}

/**
 * Whether an fd whose stat found nothing is still there as a link: then its target is missing on
 * this host (a closed fd is gone from the listing, and lstat finds nothing either).
 */
function dangling(file: string): boolean {
  return fs.lstatSync(file, { throwIfNoEntry: false })?.isSymbolicLink() === true;
}
