/** `slurm-otel explain`: one cycle, then the attribution table in the terminal (or JSON). */
import { Command, Option } from 'commander';
import Table from 'cli-table3';
import { NodeCollector } from '../node/collector.js';
import { attributionRows, slurmCgroupsNote, type PortRow } from '../node/explain.js';
import { describeUnreadable, unreadableLine, type UnreadablePolicy } from '../node/unreadable.js';
import { addRootOptions, unreadableOption } from './node.js';
import { parseDuration } from './values.js';

interface ExplainFlags {
  sysfsRoot: string;
  procfsRoot: string;
  cgroupRoot: string;
  unreadableProcesses: UnreadablePolicy;
  json?: boolean;
}

export function explainCommand(): Command {
  return addRootOptions(new Command('explain').description('why each HCA port is (or is not) attributed to a job, on this node'))
    .addOption(unreadableOption())
    .option('--json', 'print the rows as JSON (for scripts)')
    .addOption(new Option('--fd-rescan-interval <duration>').hideHelp().default(0).argParser(parseDuration))
    .action((f: ExplainFlags) => {
      const roots = { sysfs: f.sysfsRoot, procfs: f.procfsRoot, cgroupfs: f.cgroupRoot };
      const c = new NodeCollector({ roots, fdRescanIntervalMs: 0, unreadableProcesses: f.unreadableProcesses }).cycle();
      const rows = attributionRows(c);
      const { snapshot: snap } = c;
      if (f.json) {
        const out = { at: new Date(snap.atMs).toISOString(), slurmCgroups: snap.slurmCgroups, gaps: snap.gaps, unreadable: snap.unreadable, ports: rows };
        process.stdout.write(JSON.stringify(out, null, 2) + '\n');
        return;
      }
      const note = slurmCgroupsNote(snap);
      if (note !== undefined) process.stdout.write(`${note}\n`);
      if (!c.snapshot.hca.present) process.stdout.write(`no InfiniBand devices under ${f.sysfsRoot}/class/infiniband\n`);
      process.stdout.write(renderTable(rows) + '\n');
      // Unreadable processes get their own, longer lines below.
      const named = new Set(snap.unreadable.map(describeUnreadable));
      for (const gap of snap.gaps.filter((g) => !named.has(g)).slice(0, 10)) process.stdout.write(`gap: ${gap}\n`);
      for (const u of snap.unreadable) process.stdout.write(`unreadable: ${unreadableLine(u)}\n`);
    });
}

export function renderTable(rows: readonly PortRow[]): string {
  const table = new Table({ head: ['device', 'port', 'link', 'holders', 'status', 'why'], style: { head: [], border: [] }, wordWrap: true, colWidths: [null, null, 22, 40, null, 44] });
  for (const r of rows) {
    const holders = [
      ...r.jobs.map((j) => `job ${j.jobId}: ${j.holders.map((h) => `${h.pid} ${h.comm}`).join(', ')}`),
      ...r.nonJob.map((h) => `non-job: ${h.pid} ${h.comm}`),
    ];
    table.push([r.device, r.port, `${r.linkLayer} ${r.rate}`.trim(), holders.join('\n') || '—', r.status, r.why]);
  }
  return table.toString();
}
