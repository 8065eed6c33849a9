import { execFileSync, spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { writeHca } from '../../../src/demo/nodetree.js';
import {
  ATTRIBUTE_LIMIT,
  entryPath,
  LIST_LIMIT,
  linksCountSubdirs,
  listSubdirs,
  readSmall,
  subdirsOf,
} from '../../../src/node/read/roots.js';
import { tmpDir } from '../../support/tmp.js';
import { waitFor } from '../../support/tools.js';

const HCA_JS = path.resolve('dist/src/node/read/hca.js');
const PROBLEMS_JS = path.resolve('dist/src/node/read/problems.js');

/**
 * Reads the HCAs of `sysfs` in a child process with a deadline: a read that blocks
 * forever (a FIFO opened for reading) must fail the test, not hang the test runner.
 */
function readHcasInChild(sysfs: string): { counters: Record<string, string>; problems: string[]; bytesRead: number } {
  // bytesRead: what the read itself took from files (rchar of /proc/self/io), whatever the time.
  const script = `
    import { readFileSync } from 'node:fs';
    import { readHcas } from ${JSON.stringify(HCA_JS)};
    import { Problems } from ${JSON.stringify(PROBLEMS_JS)};
    const rchar = () => Number(/rchar: (\\d+)/.exec(readFileSync('/proc/self/io', 'utf8'))[1]);
    const problems = new Problems();
    const before = rchar();
    const scan = readHcas(${JSON.stringify(sysfs)}, problems);
    const bytesRead = rchar() - before;
    const counters = Object.fromEntries([...scan.hcas[0].ports[0].counters].map(([k, v]) => [k, String(v)]));
    const listed = problems.list().map((p) => p.kind + ':' + p.count);
    process.stdout.write(JSON.stringify({ counters, problems: listed, bytesRead }));`;
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8', timeout: 60_000 });
  expect(r.error, 'the HCA read did not finish within 60 s').toBeUndefined();
  expect(r.status, r.stderr).toBe(0);
  return JSON.parse(r.stdout) as { counters: Record<string, string>; problems: string[]; bytesRead: number };
}

function hcaTree(): { sysfs: string; counters: string } {
  const sysfs = path.join(tmpDir(), 'sys');
  writeHca(sysfs, {
    name: 'mlx5_0',
    uverbs: 0,
    ports: [
      {
        linkLayer: 'InfiniBand',
        rate: '200 Gb/sec (4X HDR)',
        counters: { port_xmit_data: 7, port_rcv_data: 8, port_xmit_packets: 9, symbol_error: 1 },
      },
    ],
  });
  return { sysfs, counters: path.join(sysfs, 'class/infiniband/mlx5_0/ports/1/counters') };
}

describe('hostile files in sysfs', () => {
  it('neither blocks on a FIFO, nor reads a device or a 1 GB file: malformed and too_large are counted', () => {
    const { sysfs, counters } = hcaTree();
    fs.rmSync(path.join(counters, 'port_rcv_data'));
    execFileSync('mkfifo', [path.join(counters, 'port_rcv_data')]);
    fs.rmSync(path.join(counters, 'port_xmit_data'));
    fs.symlinkSync('/dev/zero', path.join(counters, 'port_xmit_data'));
    fs.truncateSync(path.join(counters, 'port_xmit_packets'), 1 << 30);
    const r = readHcasInChild(sysfs);
    expect(r.counters).toEqual({ symbol_error: '1' });
    expect(r.problems.sort()).toEqual(['malformed:2', 'too_large:1']);
    // A few KiB of the 1 GB file (and of the other attributes), not all of it.
    expect(r.bytesRead).toBeLessThan(1 << 20);
  });
});

describe('entryPath', () => {
  it('names what a listing gave as path.join does, under the root too, and opens it', () => {
    const dir = tmpDir();
    fs.mkdirSync(path.join(dir, 'job_7', 'step_0'), { recursive: true });
    for (const name of fs.readdirSync(path.join(dir, 'job_7'))) {
      const p = entryPath(path.join(dir, 'job_7'), name);
      expect(p).toBe(path.join(dir, 'job_7', name));
      expect(fs.statSync(p).isDirectory()).toBe(true);
    }
    for (const name of fs.readdirSync('/').slice(0, 5)) expect(entryPath('/', name)).toBe(path.join('/', name));
  });
});

describe('readSmall', () => {
  it('refuses a FIFO that a writer holds open (EAGAIN) without waiting, and reads an empty file', async () => {
    const dir = tmpDir();
    const fifo = path.join(dir, 'fifo');
    execFileSync('mkfifo', [fifo]);
    // Opened read-write, the FIFO has a writer at once: a non-blocking read finds no data (EAGAIN).
    const writer = spawn('sh', ['-c', `exec 3<>${fifo}; sleep 30`], { stdio: 'ignore' });
    try {
      await waitFor('the writer to hold the FIFO', () => fs.existsSync(`/proc/${writer.pid}/fd/3`));
      expect(readSmall(fifo)).toMatchObject({ ok: false, kind: 'malformed' });
    } finally {
      writer.kill();
    }
    fs.writeFileSync(path.join(dir, 'empty'), '');
    expect(readSmall(path.join(dir, 'empty'))).toEqual({ ok: true, value: '' });
  });

  it(`reads at most ${ATTRIBUTE_LIMIT} bytes of an attribute`, () => {
    const dir = tmpDir();
    fs.writeFileSync(path.join(dir, 'fits'), 'x'.repeat(ATTRIBUTE_LIMIT));
    fs.writeFileSync(path.join(dir, 'over'), 'x'.repeat(ATTRIBUTE_LIMIT + 1));
    expect(readSmall(path.join(dir, 'fits'))).toMatchObject({ ok: true, value: 'x'.repeat(ATTRIBUTE_LIMIT) });
    expect(readSmall(path.join(dir, 'over'))).toMatchObject({ ok: false, kind: 'too_large' });
  });

  it('reads a long cgroup.procs whole with the list bound, and no further', () => {
    const dir = tmpDir();
    const pids = Array.from({ length: 200_000 }, (_, i) => String(1_000_000 + i)).join('\n') + '\n';
    fs.writeFileSync(path.join(dir, 'cgroup.procs'), pids);
    expect(readSmall(path.join(dir, 'cgroup.procs'), { limit: LIST_LIMIT })).toEqual({ ok: true, value: pids });
    expect(readSmall(path.join(dir, 'cgroup.procs'))).toMatchObject({ ok: false, kind: 'too_large' });
    fs.truncateSync(path.join(dir, 'cgroup.procs'), LIST_LIMIT + 1);
    expect(readSmall(path.join(dir, 'cgroup.procs'), { limit: LIST_LIMIT })).toMatchObject({
      ok: false,
      kind: 'too_large',
    });
  });

  it('decodes UTF-8 when asked and keeps bytes as latin1 otherwise', () => {
    const file = path.join(tmpDir(), 'comm');
    fs.writeFileSync(file, 'trainé\n');
    expect(readSmall(file, { utf8: true })).toEqual({ ok: true, value: 'trainé\n' });
    expect(readSmall(file)).toEqual({ ok: true, value: Buffer.from('trainé\n').toString('latin1') });
  });

  it('classifies a directory as malformed and keeps the errno of a failed open', () => {
    const dir = tmpDir();
    expect(readSmall(dir)).toMatchObject({ ok: false, kind: 'malformed' });
    expect(readSmall(path.join(dir, 'missing'))).toMatchObject({ ok: false, kind: 'gone', code: 'ENOENT' });
  });
});

/** A cgroup2 hierarchy of this host to make a test cgroup in: the root if unified, else the hybrid's. */
function cgroup2Root(): string | undefined {
  const CGROUP2 = 0x63677270;
  for (const dir of ['/sys/fs/cgroup', '/sys/fs/cgroup/unified'])
    if (fs.existsSync(dir) && Number(fs.statfsSync(dir).type) === CGROUP2) return dir;
  return undefined;
}

function pidsIn(cgroup: string): number[] {
  return fs
    .readFileSync(path.join(cgroup, 'cgroup.procs'), 'latin1')
    .split('\n')
    .filter((l) => l !== '')
    .map(Number);
}

describe('the real cgroup filesystem', () => {
  it('reads a cgroup.procs of several pages whole as short records, and tells a leaf by its link count', async (ctx) => {
    const root = cgroup2Root();
    if (root === undefined) {
      if (process.env.CI) throw new Error('no cgroup2 hierarchy at /sys/fs/cgroup or /sys/fs/cgroup/unified');
      return ctx.skip('no cgroup2 hierarchy here: a test cgroup cannot be made');
    }
    if (process.getuid?.() !== 0) return ctx.skip('making a cgroup needs root');
    const top = path.join(root, `otel-read-test-${process.pid}`);
    const leaf = path.join(top, 'step_0', 'task_0');
    fs.mkdirSync(leaf, { recursive: true });
    // Enough processes that their PIDs, a line each, fill more than one page of the kernel's list.
    const many = 1500;
    const holder = spawn(
      'sh',
      ['-c', `echo $$ > ${leaf}/cgroup.procs; i=0; while [ $i -lt ${many} ]; do sleep 900 & i=$((i+1)); done; wait`],
      {
        stdio: 'ignore',
      },
    );
    try {
      await waitFor(`${many} sleepers under shell ${holder.pid}`, () => pidsIn(leaf).length > many, 120_000);
      const listed = readSmall(path.join(leaf, 'cgroup.procs'), { limit: LIST_LIMIT, shortRecords: true });
      expect(listed.ok).toBe(true);
      const text = listed.ok ? listed.value : '';
      expect(text.length).toBeGreaterThan(4096 + 2048);
      expect(
        text
          .split('\n')
          .filter((l) => l !== '')
          .map(Number)
          .sort(),
      ).toEqual(pidsIn(leaf).sort());
      expect(linksCountSubdirs(top)).toBe(true);
      const topEntries = subdirsOf(top, true);
      expect(topEntries).toMatchObject({ ok: true, value: { subdirs: ['step_0'] } });
      // A listed directory names its files too: the kernel's own, here cgroup.procs.
      expect(topEntries.ok && topEntries.value.others).toContain('cgroup.procs');
      expect(subdirsOf(path.join(top, 'step_0'), true)).toMatchObject({ ok: true, value: { subdirs: ['task_0'] } });
      // A leaf told by its link count is not listed: its files are not known.
      expect(subdirsOf(leaf, true)).toEqual({ ok: true, value: { subdirs: [] } });
      expect(listSubdirs(leaf)).toEqual({ ok: true, value: [] });
    } finally {
      for (const pid of fs.existsSync(leaf) ? pidsIn(leaf) : []) process.kill(pid, 'SIGKILL');
      await waitFor(`${leaf} to empty`, () => pidsIn(leaf).length === 0, 60_000);
      fs.rmdirSync(leaf);
      fs.rmdirSync(path.join(top, 'step_0'));
      fs.rmdirSync(top);
    }
  });

  it('trusts link counts only where the filesystem counts subdirectories in them', () => {
    // procfs is not among them: its directories' link counts are not 2 plus their subdirectories.
    expect(linksCountSubdirs('/proc')).toBe(false);
    expect(linksCountSubdirs(path.join(tmpDir(), 'missing'))).toBe(false);
    // Wherever a tree is, trusted or not, the answer is the listing's.
    const dir = tmpDir();
    fs.mkdirSync(path.join(dir, 'a', 'b'), { recursive: true });
    fs.writeFileSync(path.join(dir, 'a', 'cgroup.procs'), '');
    for (const byLinks of [true, false]) {
      expect(subdirsOf(dir, byLinks)).toEqual({ ok: true, value: { subdirs: ['a'], others: [] } });
      expect(subdirsOf(path.join(dir, 'a'), byLinks)).toEqual({
        ok: true,
        value: { subdirs: ['b'], others: ['cgroup.procs'] },
      });
      expect(subdirsOf(path.join(dir, 'a', 'b'), byLinks)).toEqual({
        ok: true,
        value: byLinks ? { subdirs: [] } : { subdirs: [], others: [] },
      });
    }
    expect(subdirsOf(path.join(dir, 'gone'), true)).toMatchObject({ ok: false, kind: 'gone' });
  });
});
