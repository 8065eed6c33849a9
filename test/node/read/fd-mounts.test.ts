import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { fdInfoInode, fdInfoMountId, FdMounts, LOCAL_TYPES, parseMountInfo } from '../../../src/node/read/fd-mounts.js';
import { tmpDir } from '../../support/tmp.js';

/** A synthetic /proc/<pid> with one fd: its fdinfo naming mount `mntId`, a link, and the process's mountinfo. */
function fakeFd(mntId: number, mountinfo: string, link = '/dev/null'): { procfs: string; pid: number } {
  const procfs = tmpDir();
  const dir = path.join(procfs, '77');
  fs.mkdirSync(path.join(dir, 'fd'), { recursive: true });
  fs.mkdirSync(path.join(dir, 'fdinfo'));
  fs.symlinkSync(link, path.join(dir, 'fd', '5'));
  fs.writeFileSync(path.join(dir, 'fdinfo', '5'), `pos:\t0\nflags:\t0100002\nmnt_id:\t${mntId}\nino:\t12\n`);
  fs.writeFileSync(path.join(dir, 'mountinfo'), mountinfo);
  return { procfs, pid: 77 };
}

const line = (id: number, fstype: string, opts = 'rw,relatime', mnt = `/m${id}`) =>
  `${id} 1 0:${id} / ${mnt} ${opts} shared:${id} - ${fstype} src${id} rw\n`;

describe('mountinfo and fdinfo', () => {
  it('reads each mount id, its filesystem type and nodev, with any number of optional fields', () => {
    const text =
      '36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue\n' +
      '40 36 0:50 / /scratch rw,nosuid,nodev shared:7 master:3 - nfs4 srv:/x rw,vers=4.2\n' +
      '41 36 0:51 / /home rw,relatime - fuse.sshfs u@h: rw,user_id=1000\n' +
      'garbage\n\n';
    expect([...parseMountInfo(text)]).toEqual([
      [36, { fstype: 'ext3', nodev: false, dev: '98:0' }],
      [40, { fstype: 'nfs4', nodev: true, dev: '0:50' }],
      [41, { fstype: 'fuse.sshfs', nodev: false, dev: '0:51' }],
    ]);
  });

  it('parses the real mountinfo of this process: its root is one of the mounts', () => {
    const mounts = parseMountInfo(fs.readFileSync('/proc/self/mountinfo', 'utf8'));
    expect(mounts.size).toBeGreaterThan(0);
    const root = fs
      .readFileSync('/proc/self/mountinfo', 'utf8')
      .split('\n')
      .find((l) => l.split(' ')[4] === '/');
    expect(mounts.get(Number(root?.split(' ')[0]))?.fstype).toBe(root?.split(' - ')[1]?.split(' ')[0]);
  });

  it('finds mnt_id in fdinfo, and nothing in text without it', () => {
    expect(fdInfoMountId('pos:\t0\nflags:\t02\nmnt_id:\t26\nino:\t5\n')).toBe(26);
    expect(fdInfoMountId('pos:\t0\nflags:\t02\n')).toBeUndefined();
    expect(fdInfoMountId('xmnt_id:\t26\n')).toBeUndefined();
  });

  it('finds ino in fdinfo, and nothing in text without it', () => {
    expect(fdInfoInode('pos:\t0\nflags:\t02\nmnt_id:\t26\nino:\t18446744073709551615\n')).toBe('18446744073709551615');
    expect(fdInfoInode('pos:\t0\nflags:\t02\nmnt_id:\t26\n')).toBeUndefined();
    expect(fdInfoInode('pos:\t0\nxino:\t5\n')).toBeUndefined();
  });
});

describe('FdMounts', () => {
  it('stats an fd on a local filesystem: a device gives its number, a file nothing (the real /proc)', () => {
    const file = path.join(tmpDir(), 'job.dat');
    fs.writeFileSync(file, 'x');
    const fds = [fs.openSync('/dev/null', 'r'), fs.openSync(file, 'r')];
    try {
      const mounts = new FdMounts('/proc');
      mounts.begin();
      const [devNull, plain] = fds.map((fd) =>
        mounts.kind(process.pid, String(fd), fs.readlinkSync(`/proc/self/fd/${fd}`)),
      );
      expect(devNull).toEqual({ dev: '1:3' });
      expect(plain).toEqual({ none: true });
      expect(mounts.counts).toEqual({ stated: 2, skipped: 0 });
    } finally {
      for (const fd of fds) fs.closeSync(fd);
    }
  });

  it('stats each file once a cycle, however many fds are on it (the real /proc)', () => {
    // A user's many fds on /dev/null, and some on a file of their own.
    const file = path.join(tmpDir(), 'job.dat');
    fs.writeFileSync(file, 'x');
    const fds = [
      ...Array.from({ length: 50 }, () => fs.openSync('/dev/null', 'r')),
      ...Array.from({ length: 10 }, () => fs.openSync(file, 'r')),
    ];
    try {
      const mounts = new FdMounts('/proc');
      const kinds = (): string[] =>
        fds.map((fd) => JSON.stringify(mounts.kind(process.pid, String(fd), fs.readlinkSync(`/proc/self/fd/${fd}`))));
      mounts.begin();
      const first = kinds();
      expect(new Set(first)).toEqual(new Set([JSON.stringify({ dev: '1:3' }), JSON.stringify({ none: true })]));
      expect(mounts.counts).toEqual({ stated: 2, skipped: 0 });
      // A new cycle asks again.
      mounts.begin();
      expect(kinds()).toEqual(first);
      expect(mounts.counts).toEqual({ stated: 2, skipped: 0 });
    } finally {
      for (const fd of fds) fs.closeSync(fd);
    }
  });

  it('knows a file by its mount and inode, except on btrfs, whose subvolumes number inodes each anew', () => {
    // Two fds whose fdinfo names the same mount and inode, linked to two devices: on ext4 the
    // second takes the first's answer (one inode is one file there); on btrfs each is stat'ed.
    for (const [fstype, second, stated] of [
      ['ext4', '1:3', 1],
      ['btrfs', '1:5', 2],
    ] as const) {
      const { procfs, pid } = fakeFd(9, line(9, fstype));
      fs.symlinkSync('/dev/zero', path.join(procfs, String(pid), 'fd', '6'));
      fs.copyFileSync(path.join(procfs, String(pid), 'fdinfo', '5'), path.join(procfs, String(pid), 'fdinfo', '6'));
      const mounts = new FdMounts(procfs);
      mounts.begin();
      expect(mounts.kind(pid, '5', '/dev/null')).toEqual({ dev: '1:3' });
      expect(mounts.kind(pid, '6', '/dev/zero'), fstype).toEqual({ dev: second });
      expect(mounts.counts.stated).toBe(stated);
    }
  });

  it('never stats an fd on a network, FUSE or stacked filesystem: nothing, unless it is named like a verbs device on a mount that allows devices (then it is to be asked elsewhere)', () => {
    const cases: [string, string, object][] = [
      [line(9, 'nfs4'), '/scratch/job.dat', { none: true }],
      [line(9, 'lustre'), '/lus/uverbs3', { ask: 'lustre', mount: '9 0:9' }],
      [line(9, 'fuse.sshfs', 'rw,nosuid,nodev'), '/home/u/uverbs3', { none: true }],
      [line(9, 'gpfs'), '/gpfs/uverbs12 (deleted)', { ask: 'gpfs', mount: '9 0:9' }],
      [line(8, 'nfs4'), '/x/uverbs3', { ask: 'an unlisted mount', mount: 'unlisted 9' }],
      [line(9, 'nfs4'), '/x/not-uverbs3.txt', { none: true }],
      // overlay passes a getattr on to its layers, which may be any of the above
      [line(9, 'overlay'), '/merged/uverbs3', { ask: 'overlay', mount: '9 0:9' }],
      [line(9, 'overlay'), '/merged/lib/libc.so.6', { none: true }],
    ];
    for (const [mountinfo, link, want] of cases) {
      // The link points at /dev/null: a stat would say it is a device, so only not asking gives `none`.
      const { procfs, pid } = fakeFd(9, mountinfo);
      const mounts = new FdMounts(procfs);
      mounts.begin();
      expect(mounts.kind(pid, '5', link), `${mountinfo.trim()} ${link}`).toEqual(want);
      expect(mounts.counts).toEqual({ stated: 0, skipped: 1 });
    }
  });

  it('asks every local filesystem type it trusts', () => {
    for (const fstype of LOCAL_TYPES) {
      const { procfs, pid } = fakeFd(9, line(9, fstype));
      const mounts = new FdMounts(procfs);
      mounts.begin();
      expect(mounts.kind(pid, '5', '/dev/null'), fstype).toEqual({ dev: '1:3' });
    }
  });

  it('reads a mountinfo once per cycle for the mounts it lists, and again after begin()', () => {
    const { procfs, pid } = fakeFd(9, line(9, 'tmpfs'));
    const mounts = new FdMounts(procfs);
    mounts.begin();
    expect(mounts.kind(pid, '5', '/dev/null')).toEqual({ dev: '1:3' });
    fs.writeFileSync(path.join(procfs, String(pid), 'mountinfo'), line(9, 'nfs'));
    expect(mounts.kind(pid, '5', '/dev/null')).toEqual({ dev: '1:3' });
    mounts.begin();
    expect(mounts.kind(pid, '5', '/dev/null')).toEqual({ none: true });
  });

  it('says an fd named like a device is missing when its link reaches nothing on this host (a copied or synthetic procfs)', () => {
    const gone = path.join(tmpDir(), 'no-such-dir');
    for (const [link, want] of [
      [`${gone}/uverbs3`, { missing: true }],
      [`${gone}/nvidia0`, { missing: true }],
      [`${gone}/job.dat`, { none: true }],
    ] as const) {
      const { procfs, pid } = fakeFd(9, line(9, 'devtmpfs'), link);
      const mounts = new FdMounts(procfs);
      mounts.begin();
      expect(mounts.kind(pid, '5', link), link).toEqual(want);
    }
  });

  it('throws as fs does when the fd closed meanwhile, for the scanner to classify', () => {
    const { procfs, pid } = fakeFd(9, line(9, 'tmpfs'));
    expect(() => new FdMounts(procfs).kind(pid, '6', '/dev/null')).toThrow(expect.objectContaining({ code: 'ENOENT' }));
  });
});
