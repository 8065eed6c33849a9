/**
 * Kills by process group never hit a PID given to someone else: in a PID namespace of its own
 * (where PIDs can be handed out on purpose), a helper's PID goes, after the helper was reaped, to
 * an unrelated process leading its own group, and it must survive both the runner's stop and the
 * tests' clean-up. And the node agent's fd cache, which tells a process by its /proc/<pid> inode,
 * across such a PID. Needs root and util-linux's unshare.
 */
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { tmpDir } from './support/tmp.js';
import { findTool, shouldRun, toolPath } from './support/tools.js';

const unshare = findTool('unshare', 'util-linux');
const root = process.geteuid?.() === 0;
if (!root && !process.env.CI) process.stderr.write('\n!!! SKIPPING the PID namespace tests: they need root !!!\n\n');
const INNER = path.resolve('dist/test/support/pid-recycle.js');

function inNamespace<T = { helper: number; other: number; survived: boolean }>(which: string): T {
  if (!root) throw new Error('the PID namespace tests need root (CI is set, so this fails instead of skipping)');
  const r = spawnSync(
    toolPath(unshare),
    ['--pid', '--fork', '--mount-proc', process.execPath, INNER, which, tmpDir('pid-ns-')],
    { encoding: 'utf8', timeout: 60_000 },
  );
  expect(r.status, r.stderr).toBe(0);
  return JSON.parse(r.stdout) as T;
}

describe.runIf(shouldRun(unshare) && (root || Boolean(process.env.CI)))('a recycled PID (PID namespace)', () => {
  it("the runner's stop does not kill a group whose leader was given the reaped helper's PID", () => {
    const r = inNamespace('runner');
    expect(r.other).toBe(r.helper);
    expect(r.survived).toBe(true);
  });

  it("the tests' clean-up (StandIns.killAll) does not either", () => {
    const r = inNamespace('clean-up');
    expect(r.other).toBe(r.helper);
    expect(r.survived).toBe(true);
  });

  it("the node agent's fd scan: the same process keeps its /proc inode, and the PID's next process neither it nor the device", () => {
    type Seen = { holders: number[]; name: string; inode: { ok: boolean; value: { ino: number; ctimeMs: number } } };
    const r = inNamespace<{ pid: number; second: number; before: [Seen, Seen]; after: Seen }>('fd-scan');
    expect(r.second).toBe(r.pid);
    const [first, steady] = r.before;
    expect(first).toMatchObject({ holders: [r.pid], name: 'sleep', inode: { ok: true } });
    expect(steady).toEqual(first);
    // Same name, same fd numbers, a plain file at fd 1: only the inode tells it from the first.
    expect(r.after).toMatchObject({ holders: [], name: 'sleep', inode: { ok: true } });
    expect(r.after.inode.value).not.toEqual(first.inode.value);
  });
});
