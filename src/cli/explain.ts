/** `slurm-otel explain`: one cycle, then the attribution table in the terminal (or JSON). */
import { Command, Option } from 'commander';
import Table from 'cli-table3';
import { NodeCollector } from '../node/collect.js';
import type { Cycle } from '../node/join/cycle.js';
import { attributionRows, evidenceText, holderText, slurmCgroupsNote, type PortRow } from '../node/explain.js';
import { describeUnreadable, unreadableLine, type UnreadablePolicy } from '../node/read/unreadable.js';
import { CollectionIncomplete } from './common.js';
import { keepRefusals, refusals } from './settings.js';
import { devicePatternOptions, type DevicePatternFlags } from './device-patterns.js';
import { explainSettings } from './explain-settings.js';
import { localityView, renderLocality } from './explain-locality.js';
import { deviceTableOption, missingDeviceWarnings } from './explain-tree.js';
import { gresPaths, jobView, JobNotOnNode, notOnNodeMessage, parseJobArg, renderJobView } from './explain-job.js';
import { join, readSmall } from '../node/read/roots.js';
import { processAgeSeconds, uptimeSeconds } from '../node/read/process-age.js';
import { SlurmGpuAllocation } from '../node/read/gres-source.js';
import { createLogger } from '../log.js';
import { idleCountedNote, withNote } from '../node/idle-traffic.js';
import {
  addGpuAllocationOptions,
  addRootOptions,
  gpuAllocationSettings,
  unreadableOption,
  type GpuAllocationFlags,
} from './node.js';

interface ExplainFlags extends GpuAllocationFlags, DevicePatternFlags {
  unreadableProcesses: UnreadablePolicy;
  json?: boolean;
  job?: string;
  deviceTable?: string;
}

export function explainCommand(): Command {
  const cmd = addGpuAllocationOptions(
    addRootOptions(
      new Command('explain').description('why each HCA port and GPU is (or is not) attributed to a job, on this node'),
    ),
  );
  // The node agent's device patterns: an excluded device is listed as such, not hidden.
  for (const o of devicePatternOptions()) cmd.addOption(o);
  cmd
    .addOption(unreadableOption())
    .addOption(deviceTableOption())
    .option('--json', 'print the rows as JSON (for scripts)')
    .addOption(
      new Option('--job <id>', 'only this job (job id or SLUID): its cgroups, processes, devices and usage').argParser(
        parseJobArg,
      ),
    )
    .action(async (f: ExplainFlags, self: Command) => {
      // Every bad setting at once, as the node agent reports them, before any cycle.
      const { roots, table, devices, warnings } = explainSettings(f, refusals(self));
      for (const w of warnings) process.stderr.write(`slurm-otel: warning: ${printable(w)}\n`);
      const gpuAllocation =
        f.gpuAllocation === 'slurm'
          ? new SlurmGpuAllocation({
              ...gpuAllocationSettings(f),
              logger: createLogger({ level: 'warn', format: 'plain' }),
              ...(table ? { deviceOf: (p: string) => table.get(p) } : {}),
            })
          : undefined;
      // Every fd table, so holders are named by PID even where the rdma cgroup charges suffice.
      const collector = new NodeCollector({
        roots,
        fdRescanIntervalMs: 0,
        unreadableProcesses: f.unreadableProcesses,
        readAllFds: true,
        // A tree that is not this host's: the host kernel's verbs contexts name the host's processes.
        ...(table ? {} : { contexts: { path: 'rdma', timeoutMs: 10_000 } }),
        gpuAllocation,
        ...(devices === undefined ? {} : { devices }),
      });
      // Yielding, so the fds asked from a child process (fd-probe.ts) are answered in this one cycle.
      let c = await collector.cycleYielding();
      if (gpuAllocation) {
        // The first cycle named the jobs on the node; Slurm's answer for each joins the second.
        await gpuAllocation.refresh();
        c = await collector.cycleYielding();
        gpuAllocation.stop();
      }
      collector.close();
      const { snapshot: snap } = c;
      const rows = attributionRows(c).map((r) => withNote(r, idleCountedNote(r, snap)));
      if (c.failed !== undefined) throw new CollectionIncomplete(`collection failed: ${printable(c.failed)}`);
      if (f.job !== undefined) return printJob(c, f.job, roots.procfs, f.json === true);
      const locality = localityView(c);
      if (f.json) {
        const out = {
          at: new Date(snap.atMs).toISOString(),
          slurmCgroups: snap.slurmCgroups,
          gaps: snap.gaps,
          unreadable: snap.unreadable,
          ports: rows,
          gpus: gpuRows(c),
          ...(locality ? { locality } : {}),
        };
        process.stdout.write(terminalJson(out) + '\n');
        return;
      }
      for (const line of missingDeviceWarnings(snap.unreadable)) process.stdout.write(`${printable(line)}\n`);
      const note = slurmCgroupsNote(snap);
      if (note !== undefined) process.stdout.write(`${printable(note)}\n`);
      if (!c.snapshot.hca.present)
        process.stdout.write(`no InfiniBand devices under ${printable(f.sysfsRoot)}/class/infiniband\n`);
      process.stdout.write(renderTable(rows) + '\n');
      process.stdout.write(
        snap.gpus.present ? renderGpus(gpuRows(c)) + '\n' : `gpus: ${printable(snap.gpus.reason ?? 'none')}\n`,
      );
      for (const line of locality ? renderLocality(locality) : []) process.stdout.write(`${printable(line)}\n`);
      // Unreadable processes get their own, longer lines below.
      const named = new Set(snap.unreadable.map(describeUnreadable));
      for (const gap of snap.gaps.filter((g) => !named.has(g)).slice(0, 10))
        process.stdout.write(`gap: ${printable(gap)}\n`);
      for (const u of snap.unreadable) process.stdout.write(`unreadable: ${printable(unreadableLine(u))}\n`);
    });
  return keepRefusals(cmd);
}

/** `--job`: that job's view alone, or exit 1 naming the jobs on the node. */
function printJob(c: Cycle, job: string, procfs: string, json: boolean): void {
  const commOf = (pid: number): string | undefined => {
    const r = readSmall(join(procfs, String(pid), 'comm'), { utf8: true });
    return r.ok ? r.value.trim() : undefined;
  };
  const uptime = uptimeSeconds(procfs);
  const ageOf = (pid: number): number | undefined =>
    uptime === undefined ? undefined : processAgeSeconds(procfs, pid, uptime);
  const view = jobView(c, job, commOf, ageOf);
  if (view === undefined) throw new JobNotOnNode(printable(notOnNodeMessage(c, job)));
  if (json) process.stdout.write(terminalJson({ at: new Date(c.snapshot.atMs).toISOString(), ...view }) + '\n');
  else for (const line of renderJobView(view, gresPaths(c))) process.stdout.write(`${printable(line)}\n`);
}

// C0 and C1 controls, DEL, and the bidirectional overrides that can reorder what a terminal shows.
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const UNPRINTABLE = /[\u0000-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/g;

/**
 * Text from the node (process names, firmware strings, paths) made safe for a terminal:
 * a process can name itself with escape sequences; they are shown as \xHH or \uHHHH.
 */
export function printable(text: string): string {
  return text.replace(UNPRINTABLE, (ch) => {
    const code = ch.charCodeAt(0);
    return code < 0x100 ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u${code.toString(16).padStart(4, '0')}`;
  });
}

// What JSON.stringify leaves raw but a terminal acts on: DEL, C1 controls (U+009B is CSI), bidi overrides.
const JSON_UNPRINTABLE = /[\u007f-\u009f\u202a-\u202e\u2066-\u2069]/g;

/**
 * JSON for a terminal or a script: the characters above written as \uHHHH escapes (C0 controls
 * JSON escapes itself), so that the text is inert on a terminal and parses to the same values.
 */
export function terminalJson(value: unknown): string {
  return JSON.stringify(value, null, 2).replace(
    JSON_UNPRINTABLE,
    (ch) => `\\u${ch.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
}

/** One GPU unit as explain shows it: which GPU (and MIG instance), who holds it, and why that status. */
interface GpuRow {
  readonly device: string;
  readonly uuid: string;
  readonly mig?: string;
  readonly status: string;
  readonly jobs: readonly string[];
  readonly nonJobPids: readonly number[];
  readonly why: string;
}

function gpuRows(c: Cycle): GpuRow[] {
  return [...judgedGpuRows(c), ...excludedGpuRows(c)];
}

/** The GPUs the operator's patterns left out: listed, never judged. */
function excludedGpuRows(c: Cycle): GpuRow[] {
  return (c.snapshot.excluded ?? [])
    .filter((e) => e.kind === 'gpu')
    .map((e) => ({ device: e.device, uuid: e.uuid ?? '', status: 'excluded', jobs: [], nonJobPids: [], why: e.why }));
}

function judgedGpuRows(c: Cycle): GpuRow[] {
  return (c.attribution.gpus ?? []).map((v) => ({
    device: `nvidia${v.unit.gpu.minor}`,
    uuid: v.unit.gpu.uuid,
    ...(v.unit.gi === undefined ? {} : { mig: `gi ${v.unit.gi} ci ${v.unit.ci ?? '?'}` }),
    status: v.status,
    jobs: v.jobs,
    nonJobPids: v.nonJobPids,
    why: v.why,
  }));
}

function renderGpus(rows: readonly GpuRow[]): string {
  const table = new Table({
    head: ['gpu', 'uuid', 'holders', 'status', 'why'],
    style: { head: [], border: [] },
    wordWrap: true,
    colWidths: [null, null, 30, null, 44],
  });
  for (const r of rows) {
    const holders = [...r.jobs.map((j) => `job ${j}`), ...r.nonJobPids.map((p) => `non-job: PID ${p}`)];
    const gpu = r.mig === undefined ? r.device : `${r.device} (${r.mig})`;
    table.push([gpu, r.uuid, holders.join('\n') || '—', r.status, r.why].map(printable));
  }
  return table.toString();
}

export function renderTable(rows: readonly PortRow[]): string {
  const table = new Table({
    head: ['device', 'port', 'link', 'holders', 'status', 'why'],
    style: { head: [], border: [] },
    wordWrap: true,
    colWidths: [null, null, 22, 40, null, 44],
  });
  for (const r of rows) {
    const holders = [
      ...r.jobs.map(
        (j) =>
          `job ${j.jobId}${j.holders.length ? `: ${j.holders.map(holderText).join(', ')}` : ''} ${evidenceText(j.evidence)}`,
      ),
      ...r.nonJob.map((h) => `non-job: ${holderText(h)} ${evidenceText(h.evidence)}`),
    ].map(printable);
    const cells = [r.device, r.port, `${r.linkLayer} ${r.rate}`.trim()].map(printable);
    table.push([...cells, holders.join('\n') || '—', r.status, printable(r.why)]);
  }
  return table.toString();
}
