/**
 * The demo's stand-in `rdma` (src/demo/fake-rdma.ts) as the tests of `--qp-counters manage` need
 * it: every call recorded, and `statistic qp set link D/P auto …` taken by a Node script beside it
 * (`rdma-set`), which applies it to the mode file. It refuses with EBUSY for the links listed in
 * `busy`, as the kernel does while QPs are bound, and with EPERM for every link when a file
 * `denied` exists (no CAP_NET_ADMIN); a turn-on of a link listed in `hang`, and a turn-off of one
 * listed in `hang-off`, never answers (until killed); a file `no-optional` makes it a tool that
 * does not know `optional-counters`.
 */
import fs from 'node:fs';
import path from 'node:path';
import { FakeRdma } from '../../src/demo/fake-rdma.js';

const SET_SCRIPT = `
const fs = require('node:fs');
const path = require('node:path');
const dir = __dirname;
const args = process.argv.slice(2);
const file = (name, fallback) => { try { return fs.readFileSync(path.join(dir, name), 'utf8'); } catch { return fallback; } };
const words = args.filter((a) => a !== '-j').join(' ');
{
  const link = args[4];
  const busy = file('busy', '').split('\\n').includes(link);
  if (!words.endsWith('auto off') && file('hang', '').split('\\n').includes(link)) {
    setInterval(() => undefined, 60000);
    return;
  }
  if (words.endsWith('auto off') && file('hang-off', '').split('\\n').includes(link)) {
    setInterval(() => undefined, 60000);
    return;
  }
  if (fs.existsSync(path.join(dir, 'denied'))) {
    process.stderr.write('error: Operation not permitted\\n');
    process.exit(1);
  }
  if (busy && !words.endsWith('auto off')) {
    process.stderr.write('kernel answers: Modifying auto mode is not allowed when there is a bound QP\\nerror: Device or resource busy\\n');
    process.exit(1);
  }
  if (words.includes('optional-counters') && fs.existsSync(path.join(dir, 'no-optional'))) {
    process.stderr.write('Unknown parameter \\'optional-counters\\'\\n');
    process.exit(1);
  }
  fs.appendFileSync(path.join(dir, 'set.log'), args.slice(4).join(' ') + '\\n');
  // Sets run side by side (a restore turns links off together): each reads, changes and writes
  // mode.json holding a lock, or one would write back a mode another has just changed. Written
  // whole and renamed, so the agent's reads never see half a file.
  const lock = path.join(dir, 'mode.lock');
  for (let tries = 0; ; tries++) {
    try { fs.mkdirSync(lock); break; } catch (e) { if (e.code !== 'EEXIST' || tries > 10000) throw e; }
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 2);
  }
  try {
    const modes = JSON.parse(file('mode.json', '[]'));
    for (const m of modes) if (m.ifname + '/' + m.port === link) m.mode = words.endsWith('auto off') ? 'qp auto off' : 'qp auto type,pid on' + (words.includes('optional-counters') ? ' optional-counters on' : '');
    const tmp = path.join(dir, 'mode.json.' + process.pid);
    fs.writeFileSync(tmp, JSON.stringify(modes));
    fs.renameSync(tmp, path.join(dir, 'mode.json'));
  } finally {
    fs.rmdirSync(lock);
  }
}
`;

export class RecordingRdma extends FakeRdma {
  constructor(dir: string) {
    super(dir);
    fs.writeFileSync(path.join(dir, 'calls.log'), '');
    fs.writeFileSync(path.join(dir, 'rdma-set'), `#!${process.execPath}\n${SET_SCRIPT}`, { mode: 0o755 });
  }

  busy(links: readonly string[]): void {
    fs.writeFileSync(path.join(this.dir, 'busy'), links.join('\n'));
  }

  /** Turning these links on never answers: the run hangs until it is killed. */
  hang(links: readonly string[]): void {
    fs.writeFileSync(path.join(this.dir, 'hang'), links.join('\n'));
  }

  /** Turning these links off never answers (a restore that hangs); an empty list ends that. */
  hangOff(links: readonly string[]): void {
    fs.writeFileSync(path.join(this.dir, 'hang-off'), links.join('\n'));
  }

  /** Every call, one line of arguments each. */
  calls(): string[] {
    return lines(path.join(this.dir, 'calls.log'));
  }

  /** The `set` calls that succeeded, from the link on (`mlx5_0/1 auto type,pid on optional-counters on`). */
  sets(): string[] {
    return lines(path.join(this.dir, 'set.log'));
  }
}

function lines(file: string): string[] {
  try {
    return fs
      .readFileSync(file, 'utf8')
      .split('\n')
      .filter((l) => l !== '');
  } catch {
    return [];
  }
}
