/**
 * The v0.0.36–v0.0.38 decoders on real Slurm 22.05 recordings. The expected values come from the
 * `sinfo` / `squeue` output recorded at the same moment (the *-cli.txt files): an independent
 * reading of the same cluster state.
 */
import { describe, expect, it } from 'vitest';
import * as v0038 from '../../../../src/cluster/api/decode/decode-v0038.js';
import { expandHostlist } from '../../../../src/cluster/hostlist.js';
import type { Decoded, SlurmJob, SlurmNode } from '../../../../src/cluster/model.js';
import { jobCpuCount, jobMemoryBytes, parseTres } from '../../../../src/cluster/tres.js';
import { listFiles, readText, recorded } from '../../fixtures.js';

function ok<T>(d: Decoded<T>): readonly T[] {
  if (!d.ok) throw new Error(`decode failed: ${d.message}`);
  expect(d.skipped).toBe(0);
  return d.items;
}

/** Lines of one `### <command>` section of a *-cli.txt file. */
function section(cli: string, command: string): string[] {
  const start = cli.indexOf(`### ${command}\n`);
  if (start < 0) throw new Error(`no section ${command}`);
  const rest = cli.slice(start + command.length + 5);
  const end = rest.indexOf('\n### ');
  return (end < 0 ? rest : rest.slice(0, end)).split('\n').filter((l) => l.trim() !== '');
}

/** Splits a fixed-width table by its header: right-aligned columns end where their header ends. */
function table(lines: string[]): Record<string, string>[] {
  const header = lines[0] as string;
  const cols = [...header.matchAll(/\S+/g)].map((m) => ({ name: m[0], start: m.index, end: m.index + m[0].length }));
  return lines.slice(1).map((line) => {
    const row: Record<string, string> = {};
    cols.forEach((c, i) => {
      const from = i === 0 ? 0 : (cols[i - 1]?.end ?? 0);
      // The last column (NODELIST, REASON) is left-aligned and runs to the end of the line.
      row[c.name] = (i === cols.length - 1 ? line.slice(c.start) : line.slice(from, c.end)).trim();
    });
    return row;
  });
}

/** sinfo's word for a node state, for the combinations the recording contains. */
function sinfoWord(n: SlurmNode): string {
  const flags = new Set(n.state.flags);
  const base = n.state.base.toLowerCase();
  let word = base;
  if (flags.has('DRAIN')) {
    if (base === 'mixed' || base === 'allocated') word = 'draining';
    else if (base === 'idle') word = 'drained';
    else throw new Error(`no sinfo word known for ${base}+DRAIN`);
  }
  return flags.has('NOT_RESPONDING') ? `${word}*` : word;
}

/** squeue's JOBID column: `6_[4-7%4]` for a pending array master, `6_0` for a task. */
function squeueId(j: SlurmJob): string {
  if (j.array_job_id === undefined || j.array_job_id === '0') return j.job_id;
  const task = j.array_task_id ?? '';
  return /^\d+$/.test(task) ? `${j.array_job_id}_${task}` : `${j.array_job_id}_[${task}]`;
}

const STEPS_WITH_NODES = listFiles('recorded', 'slurm-22.05', 'dbd', 'v0.0.38')
  .filter((f) => f.endsWith('-nodes.json'))
  .map((f) => f.replace(/-nodes\.json$/, ''));
const STEPS_WITH_JOBS = listFiles('recorded', 'slurm-22.05', 'dbd', 'v0.0.38')
  .filter((f) => /^\d+[a-z]?-[a-z0-9-]+-jobs\.json$/.test(f) && !f.includes('slurmdb'))
  .map((f) => f.replace(/-jobs\.json$/, ''));

describe('v0.0.38 nodes agree with sinfo -N -l', () => {
  it('covers the drain, down and not-responding steps', () => {
    expect(STEPS_WITH_NODES).toEqual(
      expect.arrayContaining(['02-drain-node2', '03-down-node3', '06a-node4-notresponding', '06b-node4-down']),
    );
  });
  for (const step of STEPS_WITH_NODES) {
    it(step, () => {
      const nodes = ok(v0038.decodeNodes(recorded('v0.0.38', `${step}-nodes.json`)));
      const rows = table(
        section(readText('recorded', 'slurm-22.05', 'dbd', 'v0.0.38', `${step}-cli.txt`), 'sinfo -N -l').slice(1),
      );
      expect(nodes.map((n) => n.name)).toEqual(rows.map((r) => r['NODELIST']));
      for (const n of nodes) {
        const row = rows.find((r) => r['NODELIST'] === n.name) as Record<string, string>;
        expect(sinfoWord(n), n.name).toBe(row['STATE']);
        expect(String(n.cpus)).toBe(row['CPUS']);
        expect(String(n.real_memory)).toBe(row['MEMORY']);
        expect(n.reason ?? 'none').toBe(row['REASON']);
        expect(n.partitions.map((p) => `${p}`)).toContain(row['PARTITION']?.replace('*', ''));
      }
    });
  }
});

describe('v0.0.38 jobs agree with squeue -t all', () => {
  for (const step of STEPS_WITH_JOBS) {
    it(step, () => {
      const jobs = ok(v0038.decodeJobs(recorded('v0.0.38', `${step}-jobs.json`)));
      const rows = table(
        section(readText('recorded', 'slurm-22.05', 'dbd', 'v0.0.38', `${step}-cli.txt`), 'squeue -t all'),
      );
      const asRows = jobs.map((j) => ({
        JOBID: squeueId(j),
        PARTITIO: j.partition ?? '',
        NAME: (j.name ?? '').slice(0, 10),
        STATE: j.state[0] ?? '',
        // squeue prints the long description when Slurm has one, else the reason.
        REASON: (j.state_description ?? j.state_reason ?? '').slice(0, 20),
        NODELIST: j.nodes,
      }));
      const key = (r: Record<string, string>) =>
        JSON.stringify([r['JOBID'], r['PARTITIO'], r['NAME'], r['STATE'], r['REASON'], r['NODELIST']]);
      expect(asRows.map(key).sort()).toEqual(rows.map(key).sort());
    });
  }
});

describe('older shapes of the same recording', () => {
  it('v0.0.36 nodes decode without state_flags, alloc_cpus, alloc_memory or partitions', () => {
    const nodes = ok(v0038.decodeNodes(recorded('v0.0.36', '01-jobs-nodes.json')));
    expect(nodes).toHaveLength(4);
    for (const n of nodes) {
      expect(n.state.base).toBe('ALLOCATED');
      expect(n.state.flags).toEqual([]);
      expect(n.partitions).toEqual([]);
      expect(n.alloc_cpus).toBeUndefined();
      expect(n.alloc_memory).toBeUndefined();
      expect(n.real_memory).toBe(8000);
    }
  });

  it('v0.0.36, v0.0.37 and v0.0.38 give the same jobs for the same moment', () => {
    const project = (j: SlurmJob) => [
      j.job_id,
      j.state,
      j.partition,
      j.nodes,
      j.array_job_id,
      j.array_task_id,
      j.tres_alloc_str,
      j.exit_code,
    ];
    const byVersion = ['v0.0.36', 'v0.0.37', 'v0.0.38'].map((v) =>
      ok(v0038.decodeJobs(recorded(v, '01-jobs-jobs.json'))).map(project),
    );
    expect(byVersion[0]).toEqual(byVersion[2]);
    expect(byVersion[1]).toEqual(byVersion[2]);
  });

  it('v0.0.36 and v0.0.38 diag agree on the counters both have', () => {
    const d36 = ok(v0038.decodeDiag(recorded('v0.0.36', '01-jobs-diag.json')))[0];
    const d38 = ok(v0038.decodeDiag(recorded('v0.0.38', '01-jobs-diag.json')))[0];
    expect(d36?.server_thread_count).toBe(3);
    expect(d36?.rpcs_by_message_type).toEqual([]);
    expect(d38?.server_thread_count).toBe(d36?.server_thread_count);
    expect(d38?.jobs_submitted).toBe(d36?.jobs_submitted);
  });
});

describe('v0.0.38 job details', () => {
  const jobs = ok(v0038.decodeJobs(recorded('v0.0.38', '01-jobs-jobs.json')));
  const byId = (id: string) => jobs.find((j) => j.job_id === id) as SlurmJob;
  const ids = Object.fromEntries(
    readText('recorded', 'slurm-22.05', 'dbd', 'job-ids.txt')
      .replace(/^jobs:\s*/, '')
      .trim()
      .split(/\s+/)
      .map((kv) => kv.split('=') as [string, string]),
  );

  it('turns raw wait statuses into exit codes (768 = exit 3, 15 = SIGTERM)', () => {
    expect(byId(ids['fail'] as string).exit_code).toEqual({ status: ['ERROR'], return_code: 3 });
    expect(byId(ids['cancel'] as string).exit_code).toEqual({ status: ['SIGNALED'], signal: 15 });
    expect(byId(ids['ok'] as string).exit_code).toEqual({ status: ['SUCCESS'], return_code: 0 });
  });

  it('keeps the pending array master apart from its running tasks', () => {
    const master = byId(ids['arr'] as string);
    expect(master.array_job_id).toBe(ids['arr']);
    expect(master.array_task_id).toBe('4-7%4');
    const tasks = jobs.filter((j) => j.array_job_id === ids['arr'] && j.job_id !== ids['arr']);
    expect(tasks.map((t) => t.array_task_id).sort()).toEqual(['0', '1', '2', '3']);
  });

  it('reads times, leaving unset ones undefined', () => {
    const pending = byId(ids['held'] as string);
    expect(pending.start_time).toBeUndefined();
    expect(pending.end_time).toBeUndefined();
    expect(pending.submit_time).toBeGreaterThan(1.7e9);
    expect(pending.nodes).toBe('');
    const running = byId(ids['a'] as string);
    expect(running.start_time).toBeGreaterThan(1.7e9);
    // 22.05 forecasts the end of a job without a limit as start + 1 year.
    expect((running.end_time as number) - (running.start_time as number)).toBe(365 * 86400);
    expect(running.time_limit).toBeUndefined();
  });

  it('reads GPU TRES and resource fallbacks', () => {
    const gpu2 = byId(ids['gpu2'] as string);
    expect(parseTres(gpu2.tres_alloc_str).gpus).toBe(2);
    expect(jobCpuCount(gpu2)).toBe(2);
    expect(jobMemoryBytes(gpu2)).toBe(2000 * 1024 * 1024);
    expect(expandHostlist(gpu2.nodes)).toEqual(['node4']);
    expect(gpu2.user_id).toBe(0);
    expect(gpu2.user_name).toBe('root');
  });
});

describe('dbv0.0.38 accounting jobs', () => {
  const acct = ok(v0038.decodeAccountingJobs(recorded('v0.0.38', '07-recovered-slurmdb-jobs.json')));
  const ctl = ok(v0038.decodeJobs(recorded('v0.0.38', '07-recovered-jobs.json')));

  it('marks the source and leaves user_id unknown', () => {
    for (const j of acct) {
      expect(j.source).toBe('accounting');
      expect(j.user_id).toBeUndefined();
      expect(j.user_name).toBe('root');
    }
  });

  it('renders a hex array bitmap as a range and drops "None assigned"', () => {
    const master = acct.find((j) => j.job_id === '6') as SlurmJob;
    expect(master.array_task_id).toBe('4-7');
    expect(master.nodes).toBe('');
    const task = acct.find((j) => j.job_id === '12') as SlurmJob;
    expect([task.array_job_id, task.array_task_id]).toEqual(['6', '2']);
  });

  it('agrees with the controller on the jobs both report', () => {
    const common = acct.filter((a) => ctl.some((c) => c.job_id === a.job_id));
    expect(common.length).toBeGreaterThan(5);
    for (const a of common) {
      const c = ctl.find((x) => x.job_id === a.job_id) as SlurmJob;
      expect([a.name, a.partition, a.array_job_id], a.job_id).toEqual([c.name, c.partition, c.array_job_id]);
      if (c.state[0] === 'RUNNING' && a.state[0] === 'RUNNING') {
        expect(a.nodes).toBe(c.nodes);
        expect(parseTres(a.tres_alloc_str).cpus).toBe(parseTres(c.tres_alloc_str).cpus);
        expect(parseTres(a.tres_alloc_str).memory_bytes).toBe(parseTres(c.tres_alloc_str).memory_bytes);
        expect(parseTres(a.tres_alloc_str).gpus).toBe(parseTres(c.tres_alloc_str).gpus);
      }
    }
  });

  it('treats slurmdbd "Nothing found" as an empty result, not a failure', () => {
    const d = v0038.decodeAccountingJobs(recorded('v0.0.38', '00-idle-slurmdb-jobs.json'));
    expect(d.ok).toBe(true);
    if (d.ok) {
      expect(d.items).toEqual([]);
      expect(d.errors[0]?.error_number).toBe(9003);
      expect(d.meta).toEqual({ data_parser: 'openapi/dbv0.0.38', slurm_release: '22.05.8' });
    }
  });
});
