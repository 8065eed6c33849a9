import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { commOf, FdScanner, startTime } from '../../src/node/owners.js';
import { Problems } from '../../src/node/problems.js';
import { writeProcess } from '../../src/demo/nodetree.js';
import { asUnprivileged, deny, removeProcess, tmpDir } from '../support/tmp.js';

function procfs(): string {
  const dir = path.join(tmpDir(), 'proc');
  fs.mkdirSync(dir);
  return dir;
}

describe('FdScanner', () => {
  it('maps every process holding a uverbs fd, job or not', () => {
    const proc = procfs();
    writeProcess(proc, { pid: 10, comm: 'a', uverbs: [0, 3], fds: 10 });
    writeProcess(proc, { pid: 11, comm: 'b', uverbs: [3] });
    writeProcess(proc, { pid: 12, comm: 'c', fds: 50 });
    fs.mkdirSync(path.join(proc, 'self'));
    const scan = new FdScanner(proc, 60_000).scan(0, new Problems());
    expect(Object.fromEntries(scan.holders)).toEqual({ uverbs0: [10], uverbs3: [10, 11] });
    expect([...scan.present].sort()).toEqual([10, 11, 12]);
    expect(scan.unreadable).toEqual([]);
  });

  it('reads a steady process once, then only fd numbers not seen before', () => {
    const proc = procfs();
    writeProcess(proc, { pid: 20, comm: 'a', fds: 100 });
    const scanner = new FdScanner(proc, 60_000);
    expect(scanner.scan(0, new Problems()).stats.fdLinksRead).toBe(100);
    expect(scanner.scan(1000, new Problems()).stats.fdLinksRead).toBe(0);
    fs.symlinkSync('/dev/infiniband/uverbs7', path.join(proc, '20', 'fd', '100'));
    const third = scanner.scan(2000, new Problems());
    expect(third.stats.fdLinksRead).toBe(1);
    expect(third.holders.get('uverbs7')).toEqual([20]);
  });

  it('forgets a closed uverbs fd at the next listing', () => {
    const proc = procfs();
    writeProcess(proc, { pid: 21, comm: 'a', uverbs: [1] });
    const scanner = new FdScanner(proc, 60_000);
    expect(scanner.scan(0, new Problems()).holders.get('uverbs1')).toEqual([21]);
    fs.unlinkSync(path.join(proc, '21', 'fd', '3'));
    expect(scanner.scan(1000, new Problems()).holders.size).toBe(0);
  });

  it('re-reads every link after the rescan interval (catching an fd number reused in between)', () => {
    const proc = procfs();
    writeProcess(proc, { pid: 22, comm: 'a', fds: 8 });
    const scanner = new FdScanner(proc, 60_000);
    scanner.scan(0, new Problems());
    // Same fd number, new target: invisible to the listing compare.
    fs.unlinkSync(path.join(proc, '22', 'fd', '5'));
    fs.symlinkSync('/dev/infiniband/uverbs2', path.join(proc, '22', 'fd', '5'));
    expect(scanner.scan(30_000, new Problems()).holders.size).toBe(0);
    const full = scanner.scan(60_000, new Problems());
    expect(full.stats.fullRescan).toBe(true);
    expect(full.stats.fdLinksRead).toBe(8);
    expect(full.holders.get('uverbs2')).toEqual([22]);
  });

  it('reads a reused PID (new start time) in full', () => {
    const proc = procfs();
    writeProcess(proc, { pid: 23, comm: 'old', fds: 6, startTime: 100 });
    const scanner = new FdScanner(proc, 60_000);
    scanner.scan(0, new Problems());
    removeProcess(proc, 23);
    writeProcess(proc, { pid: 23, comm: 'new', fds: 4, uverbs: [5], startTime: 200 });
    const scan = scanner.scan(1000, new Problems());
    expect(scan.stats.fdLinksRead).toBe(4);
    expect(scan.holders.get('uverbs5')).toEqual([23]);
  });

  it('reports a process whose fd table cannot be read as unreadable, never as holding nothing', () => {
    const proc = procfs();
    writeProcess(proc, { pid: 30, comm: 'secret', uverbs: [0] });
    writeProcess(proc, { pid: 31, comm: 'open', uverbs: [1] });
    deny(path.join(proc, '30', 'fd'));
    const problems = new Problems();
    const scan = asUnprivileged(() => new FdScanner(proc, 60_000).scan(0, problems));
    expect(scan.unreadable).toEqual([{ pid: 30, errno: 'EACCES' }]);
    expect(scan.holders.get('uverbs1')).toEqual([31]);
    expect(problems.list()).toEqual([expect.objectContaining({ source: 'proc', kind: 'denied', count: 1 })]);
  });

  it('passes over a process that exits between the listing and its reads', () => {
    const proc = procfs();
    fs.mkdirSync(path.join(proc, '40'));
    const problems = new Problems();
    const scan = new FdScanner(proc, 60_000).scan(0, problems);
    expect(scan.unreadable).toEqual([]);
    expect(problems.list()).toEqual([]);
  });
});

describe('startTime', () => {
  it('reads field 22 even when the command name has spaces and parentheses', () => {
    const rest = Array.from({ length: 50 }, (_, i) => (i === 19 ? '123456' : '0')).join(' ');
    expect(startTime(`77 (a b) (c)) ${rest}`)).toBe('123456');
  });
});

describe('commOf', () => {
  it('reads the name between the first "(" and the last ")", UTF-8 included, as /proc/<pid>/comm has it', () => {
    const stat = (name: string) => Buffer.from(`77 (${name}) S 1 77 77 0 -1`, 'utf8').toString('latin1');
    expect(commOf(stat('a b) (c)'))).toBe('a b) (c)');
    expect(commOf(stat('wéka😀'))).toBe('wéka😀');
    expect(commOf(stat(''))).toBe('');
  });

  it("names each process scanned by the comm in its stat, and follows a reused PID's new name", () => {
    const proc = procfs();
    writeProcess(proc, { pid: 23, comm: 'old', fds: 2, startTime: 100 });
    const scanner = new FdScanner(proc, 60_000);
    expect(scanner.scan(0, new Problems()).names.get(23)).toBe('old');
    removeProcess(proc, 23);
    writeProcess(proc, { pid: 23, comm: 'new name', fds: 2, startTime: 200 });
    expect(scanner.scan(1000, new Problems()).names.get(23)).toBe('new name');
    // Renamed in place (prctl), same start time and fds: the cached entry takes the new name.
    removeProcess(proc, 23);
    writeProcess(proc, { pid: 23, comm: 'renamed', fds: 2, startTime: 200 });
    const scan = scanner.scan(2000, new Problems());
    expect(scan.stats.fdLinksRead).toBe(0);
    expect(scan.names.get(23)).toBe('renamed');
  });
});
