/**
 * Run as PID 1 of a new PID namespace (`unshare --pid --fork --mount-proc node <this> <case>
 * <dir>`, root): a helper's PID is given, after it was reaped, to an unrelated process leading a
 * group of its own (ns_last_pid set to the PID before it), then the kill under test runs. Prints
 * one JSON line: the two PIDs and whether the unrelated process survived.
 *   runner:   a ChildRunner run whose helper exited while a daemon it left holds its output;
 *             stop() then ends the run.
 *   clean-up: a stand-in that recorded itself and exited; StandIns.killAll() then cleans up.
 * Or (case fd-scan) the node agent's fd scan of this namespace's /proc across such a PID: the
 * first process holds a stand-in device at fd 1, the second, given its PID, holds a plain file
 * there; both run `sleep` with fds 0, 1 and 2. Prints what three scans saw.
 */
import { spawn, spawnSync, type ChildProcess, type StdioOptions } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { ChildRunner } from '../../src/child-runner.js';
import { FdScanner } from '../../src/node/read/owners.js';
import { Problems } from '../../src/node/read/problems.js';
import { inodeOf } from '../../src/node/read/roots.js';
import { alive, DAEMONIZE, procStat, StandIns, type Recorded } from './stopping.js';
import { waitFor } from './tools.js';

/** Clock ticks since boot now (USER_HZ is 100 on Linux). */
function ticksNow(): number {
  return Math.floor(Number(fs.readFileSync('/proc/uptime', 'latin1').split(' ')[0]) * 100);
}

/** A process leading its own group, given `pid` (free now) by setting the last PID handed out. */
async function squatter(pid: number, after: Recorded, stdio: StdioOptions = 'ignore'): Promise<ChildProcess> {
  // A later start time than the helper's, so the two are told apart.
  await waitFor('a later clock tick', () => ticksNow() > after.start + 1);
  const LAST = '/proc/sys/kernel/ns_last_pid';
  const last = fs.readFileSync(LAST, 'latin1').trim();
  fs.writeFileSync(LAST, String(pid - 1));
  const other = spawn('sleep', ['600'], { detached: true, stdio });
  // PIDs are handed out on from where they were, as after a wrap of the counter.
  fs.writeFileSync(LAST, last);
  if (other.pid !== pid) throw new Error(`the PID went to ${other.pid}, not ${pid}: the namespace is not quiet`);
  return other;
}

async function runnerCase(s: StandIns): Promise<{ helper: Recorded; other: ChildProcess }> {
  const cmd = s.script('helper', `${DAEMONIZE}\nexit 0`);
  // The pipes held by the daemon keep the run open until stop() (no linger kill meanwhile).
  const runner = new ChildRunner('helper', { timeoutMs: 600_000, maxOutput: 1000, lingerMs: 600_000 });
  const run = runner.run(cmd, []).catch((err: unknown) => err);
  const helper = await waitFor('the helper reaped', () => {
    const r = s.recorded();
    return r.length >= 2 && r[0] !== undefined && procStat(r[0].pid) === undefined ? r[0] : undefined;
  });
  const other = await squatter(helper.pid, helper);
  runner.stop();
  await run;
  const daemon = s.recorded()[1] as Recorded;
  await waitFor('the daemon killed', () => !alive(daemon.pid, daemon.start));
  return { helper, other };
}

async function cleanupCase(s: StandIns): Promise<{ helper: Recorded; other: ChildProcess }> {
  spawnSync(s.script('helper', 'exit 0'));
  const helper = s.recorded()[0] as Recorded;
  const other = await squatter(helper.pid, helper);
  s.killAll();
  return { helper, other };
}

/** `sleep` with `file` open at fd 1, once it runs (its comm says so). */
async function sleeper(file: string, start: (stdio: StdioOptions) => Promise<ChildProcess>): Promise<ChildProcess> {
  const fd = fs.openSync(file, 'r');
  const child = await start(['ignore', fd, 'ignore']);
  fs.closeSync(fd);
  await waitFor('sleep running', () => readComm(child.pid) === 'sleep');
  return child;
}

function readComm(pid: number | undefined): string | undefined {
  try {
    return fs.readFileSync(`/proc/${pid}/comm`, 'latin1').trim();
  } catch {
    return undefined;
  }
}

async function fdScanCase(dir: string): Promise<object> {
  const device = path.join(dir, 'uverbs-stand-in');
  const plain = path.join(dir, 'plain');
  for (const f of [device, plain]) fs.writeFileSync(f, '');
  // No HCA here: the stand-in's link text is taken for uverbs0's device number, as in a synthetic tree.
  const scanner = new FdScanner('/proc', 600_000, (_fd, link) => (link === device ? '231:192' : undefined));
  const scan = (atMs: number, pid: number): object => {
    const s = scanner.scan(atMs, new Problems(), () => new Map([['231:192', 'uverbs0']]));
    const holders = (s.holders.get('uverbs0') ?? []).map((h) => h.pid);
    return { holders, name: s.names.get(pid), inode: inodeOf(`/proc/${pid}/`) };
  };
  const first = await sleeper(device, async (stdio) => spawn('sleep', ['600'], { stdio }));
  const pid = first.pid as number;
  const before = [scan(0, pid), scan(1_000, pid)];
  const start = procStat(pid)?.start as number;
  const exited = new Promise((resolve) => first.once('exit', resolve));
  first.kill('SIGKILL');
  await exited;
  const second = await sleeper(plain, (stdio) => squatter(pid, { pid, start }, stdio));
  const after = scan(2_000, pid);
  second.kill('SIGKILL');
  return { pid, second: second.pid, before, after };
}

async function main(): Promise<void> {
  const [which, dir] = process.argv.slice(2);
  if (process.pid !== 1 || dir === undefined) throw new Error('run as PID 1 of a new PID namespace, with a directory');
  if (which === 'fd-scan') {
    process.stdout.write(`${JSON.stringify(await fdScanCase(dir))}\n`);
    return;
  }
  const s = new StandIns(dir);
  const { helper, other } = which === 'runner' ? await runnerCase(s) : await cleanupCase(s);
  // A SIGKILL sent by the kill under test is fatal from the moment it was sent: a SIGTERM sent
  // now ends the process only if none was.
  const ended = new Promise<NodeJS.Signals | null>((resolve) => other.once('exit', (_code, sig) => resolve(sig)));
  other.kill('SIGTERM');
  const survived = (await ended) === 'SIGTERM';
  process.stdout.write(`${JSON.stringify({ helper: helper.pid, other: other.pid, survived })}\n`);
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    process.stderr.write(`${String((err as Error).stack ?? err)}\n`);
    process.exit(1);
  },
);
