/**
 * The kernel's own list of verbs contexts: which process opened a context on which HCA, told by the
 * RDMA subsystem over netlink (`rdma -j resource show ctx`), with no fd table read and no
 * filesystem asked. A process sends nothing through an HCA without a verbs context on it, so for a
 * process whose fds cannot all be known (unreadable.ts) the list bounds what it can cost: the HCAs
 * it holds contexts on, and no other.
 *
 * Two things the list cannot show, both found by comparing it with the per-device totals of
 * `rdma -j resource show`:
 * - a context whose creator has exited (a child kept the fd): the kernel lists it under no PID;
 * - a context of a process the agent's PID namespace does not see.
 * Each such context may belong to any process, so its HCA stays unknown for the processes the list
 * is asked about (`hidden`). A context made by a thread is listed under the thread's id; the
 * caller maps it to its process (`tgidOf`).
 *
 * Shapes, recorded from iproute2 on Debian 12's kernel with Soft-RoCE:
 * `[{"ifindex":0,"ifname":"rxe0","ctxn":2,"pid":329,"comm":"ibv_rc_pingpong"}]` and
 * `[{"ifindex":0,"ifname":"rxe0","pd":2,"cq":2,"qp":2,"cm_id":0,"mr":1,"ctx":1,"srq":0}]`.
 */
import fs from 'node:fs';
import { ChildRunner, RunError } from '../../child-runner.js';
import type { Logger } from '../../log.js';
import { failed, ok, type Read } from './result.js';

export interface ContextReading {
  /** PID (or thread id) → the HCAs it holds a verbs context on. */
  readonly byPid: ReadonlyMap<number, ReadonlySet<string>>;
  /** HCAs with contexts the list names no visible process for. */
  readonly hidden: ReadonlySet<string>;
}

/** What the list says of one process: HCAs it holds contexts on, and HCAs that stay unknown for it. */
export interface ProcessContexts {
  readonly held: readonly string[];
  readonly unknownOn: readonly string[];
}

const MAX_OUTPUT = 16 << 20;
const MAX_ENTRIES = 200_000;

/** Joins the two readings; a shape not as recorded is malformed (no evidence). */
export function parseContexts(ctxJson: string, totalsJson: string): Read<ContextReading> {
  let ctx: unknown;
  let totals: unknown;
  try {
    ctx = JSON.parse(ctxJson);
    totals = JSON.parse(totalsJson);
  } catch (err) {
    return failed('malformed', `rdma printed no JSON: ${(err as Error).message}`);
  }
  if (!Array.isArray(ctx) || !Array.isArray(totals) || ctx.length > MAX_ENTRIES)
    return failed('malformed', 'rdma printed no list of contexts');
  const byPid = new Map<number, Set<string>>();
  const listed = new Map<string, number>();
  for (const e of ctx as unknown[]) {
    const device = field(e, 'ifname');
    if (typeof device !== 'string') return failed('malformed', 'a context without ifname');
    listed.set(device, (listed.get(device) ?? 0) + 1);
    const pid = field(e, 'pid');
    if (!Number.isSafeInteger(pid) || (pid as number) <= 0) continue; // hidden: counted below
    const set = byPid.get(pid as number) ?? new Set<string>();
    set.add(device);
    byPid.set(pid as number, set);
  }
  const hidden = new Set<string>();
  for (const e of totals as unknown[]) {
    const device = field(e, 'ifname');
    const count = field(e, 'ctx');
    if (typeof device !== 'string' || !Number.isSafeInteger(count)) return failed('malformed', 'a device without ctx');
    const named = countNamed(ctx as unknown[], device);
    if ((count as number) > named) hidden.add(device);
  }
  return ok({ byPid, hidden });
}

function field(e: unknown, key: string): unknown {
  return typeof e === 'object' && e !== null ? (e as Record<string, unknown>)[key] : undefined;
}

function countNamed(ctx: readonly unknown[], device: string): number {
  let n = 0;
  for (const e of ctx) if (field(e, 'ifname') === device && Number.isSafeInteger(field(e, 'pid'))) n++;
  return n;
}

/** What the reading says of process `pid`, whose threads `tgidOf` maps to it. */
export function contextsOf(
  reading: ContextReading,
  pid: number,
  tgidOf: (id: number) => number | undefined,
): ProcessContexts {
  const held = new Set<string>();
  for (const [id, devices] of reading.byPid) if (id === pid || tgidOf(id) === pid) for (const d of devices) held.add(d);
  return { held: [...held].sort(), unknownOn: [...reading.hidden].filter((d) => !held.has(d)).sort() };
}

/**
 * Whether the PIDs in `procfs` are the ones the kernel's list names: the list gives PIDs as the
 * agent's own PID namespace sees them, so it is used only when `procfs` is that namespace's (its
 * `self` is the agent), not a synthetic tree or another namespace's procfs.
 */
export function sharesPidSpace(procfs: string): boolean {
  try {
    return fs.readlinkSync(`${procfs}/self`) === String(process.pid);
  } catch {
    return false;
  }
}

export interface RdmaContextsOptions {
  readonly path: string;
  readonly leadingArgs?: readonly string[];
  readonly timeoutMs: number;
  readonly logger?: Logger;
}

/** Runs the two readings, bounded; undefined when the tool cannot give them (logged once per reason). */
export class RdmaContexts {
  private readonly runner: ChildRunner;
  private readonly logged = new Set<string>();
  private missing = false;

  constructor(private readonly opts: RdmaContextsOptions) {
    this.runner = new ChildRunner(
      'rdma',
      { timeoutMs: opts.timeoutMs, maxOutput: MAX_OUTPUT },
      { logger: opts.logger },
    );
  }

  async read(): Promise<ContextReading | undefined> {
    if (this.missing || this.runner.isStopped) return undefined;
    try {
      const lead = this.opts.leadingArgs ?? [];
      const ctx = await this.runner.run(this.opts.path, [...lead, '-j', 'resource', 'show', 'ctx']);
      const totals = await this.runner.run(this.opts.path, [...lead, '-j', 'resource', 'show']);
      const r = parseContexts(ctx, totals);
      if (r.ok) return r.value;
      this.once(r.detail, 'rdma resource show: unexpected output; no context evidence');
    } catch (err) {
      const e = err as RunError;
      if (e.kind === 'start' && e.detail.code === 'ENOENT') this.missing = true;
      if (e.kind !== 'stopped')
        this.once(e.detail.stderr?.trim() || e.message, 'rdma resource show failed; no context evidence');
    }
    return undefined;
  }

  stop(): void {
    this.runner.stop();
  }

  private once(detail: string, msg: string): void {
    if (this.logged.has(detail)) return;
    this.logged.add(detail);
    this.opts.logger?.info({ path: this.opts.path, detail }, msg);
  }
}
