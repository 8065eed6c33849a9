import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { loadFile, loadUnnamed } from '../../../src/node/read/fd-native.js';
import { classify } from '../../../src/node/read/result.js';
import { nativeReader, nativeReaderTested } from '../../support/fd-reader.js';
import { asUnprivileged, deny, tmpDir } from '../../support/tmp.js';

const MODULE = fileURLToPath(new URL('../../../dist/native/fd-reader.node', import.meta.url));

/** A directory of symlinks named and pointing as given. */
function linkDir(links: Record<string, string>): string {
  const dir = tmpDir();
  for (const [name, target] of Object.entries(links)) fs.symlinkSync(target, path.join(dir, name));
  return dir;
}

/** What the native reader's pathLinks answers, as name → link, and its listing. */
function pathLinksOf(dir: string, maxNames = 1000): { listing: string; links: Record<string, string> } | undefined {
  const answer = nativeReader().pathLinks(dir, maxNames);
  if (answer === undefined) return undefined;
  const links: Record<string, string> = {};
  for (let i = 1; i < answer.length; i += 2) links[answer[i] as string] = answer[i + 1] as string;
  return { listing: answer[0] as string, links };
}

const opened: number[] = [];
afterEach(() => {
  for (const fd of opened.splice(0)) fs.closeSync(fd);
});

describe.runIf(nativeReaderTested)('the native fd reader', () => {
  it("lists a real fd table as Node's fs does, in the kernel's order (ascending numbers, not sorted as text)", () => {
    for (let i = 0; i < 12; i++) opened.push(fs.openSync('/dev/null', 'r'));
    const names = nativeReader().listing('/proc/self/fd', 10_000)?.split('/') ?? [];
    expect(names.length).toBeGreaterThan(12);
    expect(new Set(names)).toEqual(new Set(fs.readdirSync('/proc/self/fd')));
    expect(names.map(Number)).toEqual([...names.map(Number)].sort((a, b) => a - b));
  });

  it('answers undefined for a table past the names asked for, and "" for an empty one', () => {
    const dir = linkDir(Object.fromEntries(Array.from({ length: 10 }, (_, i) => [String(i), '/dev/null'])));
    expect(nativeReader().listing(dir, 9)).toBeUndefined();
    expect(nativeReader().pathLinks(dir, 9)).toBeUndefined();
    expect(new Set(nativeReader().listing(dir, 10)?.split('/'))).toEqual(new Set(fs.readdirSync(dir)));
    expect(nativeReader().listing(tmpDir(), 10)).toBe('');
    expect(nativeReader().pathLinks(tmpDir(), 10)).toEqual(['']);
  });

  it('gives the links that are paths, as readlinkSync reads them (bytes beyond UTF-8 included), and no other', () => {
    const odd = Buffer.concat([Buffer.from('/data/caf'), Buffer.from([0xe9]), Buffer.from('/r\u00e9sum\u00e9')]);
    const dir = linkDir({
      '3': 'socket:[4242]',
      '4': 'pipe:[7]',
      '5': '/dev/infiniband/uverbs0',
      '6': 'anon_inode:[eventfd]',
    });
    fs.symlinkSync(odd, path.join(dir, '7'));
    const read = pathLinksOf(dir);
    expect(new Set(read?.listing.split('/'))).toEqual(new Set(['3', '4', '5', '6', '7']));
    expect(read?.links).toEqual({ '5': '/dev/infiniband/uverbs0', '7': fs.readlinkSync(path.join(dir, '7')) });
  });

  it("reads a real fd table's paths as the kernel writes them: files, devices, not sockets", async () => {
    const file = path.join(tmpDir(), 'held file');
    fs.writeFileSync(file, '');
    opened.push(fs.openSync(file, 'r'), fs.openSync('/dev/null', 'r'));
    const server = net.createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const read = pathLinksOf('/proc/self/fd', 10_000);
      const [fileFd, nullFd] = opened.map(String);
      expect(read?.links[fileFd as string]).toBe(file);
      expect(read?.links[nullFd as string]).toBe('/dev/null');
      for (const [fd, link] of Object.entries(read?.links ?? {})) {
        expect(link.startsWith('/')).toBe(true);
        // An fd may close between the two reads (the test runner's own); those that stay agree.
        let now: string | undefined;
        try {
          now = fs.readlinkSync(`/proc/self/fd/${fd}`);
        } catch {
          now = undefined;
        }
        if (now !== undefined) expect(now).toBe(link);
      }
      expect(Object.values(read?.links ?? {}).some((l) => l.startsWith('socket:'))).toBe(false);
    } finally {
      server.close();
    }
  });

  it('keeps at most 4 MiB of links in one call: past it, undefined (the scan then reads the table its own way)', () => {
    const long = `/${'d'.repeat(250)}`.repeat(16); // 4,016 characters
    const dir = linkDir(Object.fromEntries(Array.from({ length: 1100 }, (_, i) => [String(i), long])));
    expect(nativeReader().pathLinks(dir, 10_000)).toBeUndefined();
    expect(nativeReader().listing(dir, 10_000)?.split('/')).toHaveLength(1100);
    const fewer = linkDir(Object.fromEntries(Array.from({ length: 900 }, (_, i) => [String(i), long])));
    expect(Object.keys(pathLinksOf(fewer, 10_000)?.links ?? {})).toHaveLength(900);
  });

  it('throws as fs does: a code the scan classifies, the system call and the path', () => {
    const missing = path.join(tmpDir(), 'gone');
    const file = path.join(tmpDir(), 'file');
    fs.writeFileSync(file, '');
    const notLink = tmpDir();
    fs.writeFileSync(path.join(notLink, '3'), '');
    const denied = linkDir({ '3': '/dev/null' });
    deny(denied);
    const thrown = (fn: () => unknown): NodeJS.ErrnoException => {
      try {
        fn();
      } catch (err) {
        return err as NodeJS.ErrnoException;
      }
      throw new Error('did not throw');
    };
    const gone = thrown(() => nativeReader().listing(missing, 10));
    expect(gone).toMatchObject({ code: 'ENOENT', syscall: 'scandir', path: missing });
    expect(classify(gone)).toBe('gone');
    expect(thrown(() => nativeReader().pathLinks(file, 10))).toMatchObject({ code: 'ENOTDIR' });
    expect(thrown(() => nativeReader().pathLinks(notLink, 10))).toMatchObject({ code: 'EINVAL', syscall: 'readlink' });
    const refused = asUnprivileged(() => thrown(() => nativeReader().listing(denied, 10)));
    if (process.geteuid?.() === 0) expect(classify(refused)).toBe('denied');
    expect(thrown(() => (nativeReader().listing as (...a: unknown[]) => unknown)(42))).toBeInstanceOf(TypeError);
  });
});

describe.runIf(nativeReaderTested)('loading the native fd reader', () => {
  it('loads from an unnamed file, as the single executable does, and leaves no file behind', () => {
    const dir = tmpDir();
    const exports = loadUnnamed(dir, fs.readFileSync(MODULE)) as { version: number };
    expect(exports.version).toBe(1);
    expect(fs.readdirSync(dir)).toEqual([]);
  });

  it('loads a package file only where nobody but root or the agent may write it or its directory', () => {
    const dir = tmpDir();
    const copy = path.join(dir, 'fd-reader.node');
    fs.copyFileSync(MODULE, copy);
    fs.chmodSync(copy, 0o755);
    expect((loadFile(copy) as { version: number }).version).toBe(1);
    fs.chmodSync(copy, 0o775);
    expect(() => loadFile(copy)).toThrow(/may be written by others \(mode 775\)/);
    fs.chmodSync(copy, 0o755);
    fs.chmodSync(dir, 0o777);
    expect(() => loadFile(copy)).toThrow(/may be written by others \(mode 777\)/);
    fs.chmodSync(dir, 0o755);
    if (process.geteuid?.() === 0) {
      fs.chownSync(copy, 4242, 4242);
      expect(() => loadFile(copy)).toThrow(/owned by uid 4242, neither root nor the agent's/);
    }
    expect(() => loadFile(path.join(dir, 'none.node'))).toThrow(/ENOENT/);
  });

  it('refuses a package file that a directory above it would let others swap, unless that one is sticky', () => {
    const above = tmpDir();
    const dir = path.join(above, 'native');
    fs.mkdirSync(dir, { mode: 0o755 });
    const copy = path.join(dir, 'fd-reader.node');
    fs.copyFileSync(MODULE, copy);
    fs.chmodSync(copy, 0o755);
    fs.chmodSync(above, 0o777);
    expect(() => loadFile(copy)).toThrow(new RegExp(`${above} may be written by others \\(mode 777\\)`));
    fs.chmodSync(above, 0o1777); // as /tmp: others cannot rename what is not theirs
    expect((loadFile(copy) as { version: number }).version).toBe(1);
    // Named through a link, it is the file the link leads to that is judged.
    const link = path.join(tmpDir(), 'link.node');
    fs.symlinkSync(copy, link);
    fs.chmodSync(above, 0o777);
    expect(() => loadFile(link)).toThrow(/may be written by others/);
  });

  it('is built with the package, its file and directory closed to others', () => {
    for (const p of [MODULE, path.dirname(MODULE)]) expect(fs.statSync(p).mode & 0o022).toBe(0);
  });
});
