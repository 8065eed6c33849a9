/**
 * The cluster agent against real Slurm 24.11 and 26.05 (Debian's own builds, each in its chroot,
 * slurmdbd with the host's MariaDB): one cluster per release, and on it the agent pinned to each
 * data parser the release serves (24.11: v0.0.40-v0.0.42; 26.05: v0.0.42-v0.0.45). For each:
 * nodes and jobs as sinfo and squeue show them, RPC and scheduler statistics as sdiag shows them,
 * the controller and the accounting job sources, QoS and association limits, and the optional
 * collectors (partitions, licenses, reservations, shares) as scontrol, sacctmgr and sshare show
 * them; nothing logged at warn or above.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ClusterRunner } from '../../src/cluster/agent.js';
import type { JobSource } from '../../src/cluster/fetchers.js';
import { parseExposition, select, valueOf, type Sample } from '../support/exposition.js';
import {
  REAL_SLURM_START_TIMEOUT_MS,
  realSlurmGate,
  SLURM_RELEASES,
  type RealSlurm,
  type SlurmRelease,
  startRealSlurm,
} from '../support/real-slurm.js';
import {
  expectJobsAsSqueue,
  expectSchedulerBetween,
  realSlurmRunner,
  scontrolFields,
  sdiagCounts,
  SQUEUE_JOB_FORMAT,
} from '../support/real-slurm-agent.js';
import { waitFor } from '../support/tools.js';

const RELEASES: SlurmRelease[] = ['24.11', '26.05'];
const RESERVATION = 'otel-maint';
/** sacctmgr option → the agent's limit name; the wall clock ones in minutes (exported in seconds). */
const QOS_LIMITS: Record<string, number> = {
  Priority: 19,
  GrpJobs: 11,
  GrpSubmitJobs: 12,
  MaxJobsPerUser: 10,
  MaxSubmitJobsPerUser: 14,
  MaxJobsPerAccount: 15,
  MaxSubmitJobsPerAccount: 16,
  MaxWall: 17,
  GrpWall: 18,
  UsageFactor: 2,
};
const QOS_NAMES: Record<string, string> = {
  Priority: 'priority',
  GrpJobs: 'grp_jobs',
  GrpSubmitJobs: 'grp_submit_jobs',
  MaxJobsPerUser: 'max_jobs_per_user',
  MaxSubmitJobsPerUser: 'max_submit_jobs_per_user',
  MaxJobsPerAccount: 'max_jobs_per_account',
  MaxSubmitJobsPerAccount: 'max_submit_jobs_per_account',
  MaxWall: 'max_wall_seconds',
  GrpWall: 'grp_wall_seconds',
  UsageFactor: 'usage_factor',
};
const ASSOC_LIMITS: Record<string, number> = {
  GrpJobs: 50,
  MaxJobs: 20,
  GrpSubmitJobs: 70,
  MaxSubmitJobs: 30,
  MaxWall: 60,
};
const ASSOC_NAMES: Record<string, string> = {
  GrpJobs: 'grp_jobs',
  MaxJobs: 'max_jobs',
  GrpSubmitJobs: 'grp_submit_jobs',
  MaxSubmitJobs: 'max_submit_jobs',
  MaxWall: 'max_wall_seconds',
};
const kv = ([k, v]: [string, number]): string => `${k}=${v}`;
/** sacctmgr's `[D-]HH:MM:SS` (or `MM:SS`) in seconds. */
function wallSeconds(t: string): number {
  const [d, hms] = t.includes('-') ? (t.split('-') as [string, string]) : ['0', t];
  return (
    hms
      .split(':')
      .map(Number)
      .reduce((a, x) => a * 60 + x, 0) +
    Number(d) * 86400
  );
}

/** `k=v k=v ...` (scontrol -o) as a record. */
const lines = (text: string) =>
  text
    .trim()
    .split('\n')
    .filter(Boolean)
    .map((l) => l.split('|'));

for (const release of RELEASES) {
  const gate = realSlurmGate(release);
  describe.skipIf(gate.skip)(`cluster agent on a real Slurm ${release}`, () => {
    let slurm: RealSlurm;
    const jobs: Record<string, string> = {};
    const logs: string[] = [];

    function runner(jobSource: JobSource, apiVersion: string): ClusterRunner {
      return realSlurmRunner(slurm, { jobSource, apiVersion, logs });
    }

    async function collect(r: ClusterRunner): Promise<Sample[]> {
      const tick = await r.collect();
      expect(tick.failed, logs.slice(-5).join('')).toEqual([]);
      return parseExposition(r.pipeline.exposition.text);
    }

    async function sbatch(...args: string[]): Promise<string> {
      const out = await slurm.run(['sbatch', '--parsable', '-o', '/dev/null', '-e', '/dev/null', '--mem=100', ...args]);
      return out.stdout.trim().split(';')[0] as string;
    }
    const squeue = async (format: string, ...more: string[]) =>
      lines((await slurm.run(['squeue', '-h', ...more, '-o', format])).stdout);
    const sinfoNodes = async () =>
      new Map(lines((await slurm.run(['sinfo', '-h', '-N', '-o', '%N|%T'])).stdout) as [string, string][]);

    beforeAll(async () => {
      slurm = await startRealSlurm({
        release,
        dbd: true,
        instance: `n${release.slice(0, 2)}`,
        // ReturnToService=1: nodes stay as set; fluent: a license pool for the licenses collector.
        env: { REAL_SLURM_EXTRA_CONF: 'ReturnToService=1\nLicenses=fluent:8' },
      });
      jobs.running = await sbatch('-p', 'cpu', '-J', 'otel-run', '--wrap', 'sleep 600');
      jobs.held = await sbatch('-p', 'cpu', '-J', 'otel-held', '--hold', '--wrap', 'sleep 1');
      jobs.array = await sbatch('-p', 'cpu', '-J', 'otel-array', '--array=0-3', '--wrap', 'sleep 600');
      jobs.gpu = await sbatch('-p', 'gpu', '-J', 'otel-gpu', '--gres=gpu:1', '--wrap', 'sleep 600');
      jobs.licensed = await sbatch('-p', 'cpu', '-J', 'otel-lic', '-L', 'fluent:2', '--wrap', 'sleep 600');
      await waitFor('every job but the held one running', async () => {
        const states = (await squeue('%A|%T')).map(([, s]) => s);
        return states.filter((s) => s === 'RUNNING').length === 7 ? true : undefined;
      });
      const node = slurm.nodes[slurm.nodes.length - 1] as string;
      await slurm.run(
        ['scontrol', 'create', 'reservation', `reservationname=${RESERVATION}`, 'starttime=now+3600'].concat([
          'duration=60',
          `nodes=${node}`,
          'users=root',
          'flags=maint',
        ]),
      );
      // Every scalar limit the agent exports, each with a value of its own, so a swap shows.
      await slurm.run([
        'sacctmgr',
        '-i',
        'modify',
        'qos',
        'normal',
        'set',
        'GrpTRES=cpu=64',
        ...Object.entries(QOS_LIMITS).map(kv),
      ]);
      await slurm.run(['sacctmgr', '-i', 'modify', 'account', 'root', 'set', ...Object.entries(ASSOC_LIMITS).map(kv)]);
    }, REAL_SLURM_START_TIMEOUT_MS);

    afterAll(async () => {
      await slurm?.stop();
    }, 120_000);

    it('serves exactly the data parsers of this release', () => {
      expect(slurm.dataParsers).toEqual(SLURM_RELEASES[release].dataParsers);
      expect(slurm.version.startsWith(`${release}.`), slurm.version).toBe(true);
    });

    for (const version of SLURM_RELEASES[release].dataParsers) {
      describe(`pinned to ${version}`, () => {
        let controller: ClusterRunner;
        let samples: Sample[];
        beforeAll(async () => {
          logs.length = 0;
          controller = runner('controller', version);
          // slurmdbd learns of the limits set above asynchronously: wait until the agent sees them.
          samples = await waitFor('the QoS and association limits in slurmdbd', async () => {
            const s = await collect(controller);
            const qos = valueOf(s, 'slurm_qos_limit', { qos: 'normal', limit: 'grp_wall_seconds' });
            const assoc = valueOf(s, 'slurm_association_limit', {
              account: 'root',
              user: '',
              limit: 'max_wall_seconds',
            });
            return qos !== undefined && assoc !== undefined ? s : undefined;
          });
        }, 120_000);
        afterAll(async () => {
          await controller?.shutdown();
        });

        it('exports every node with the state, CPUs, memory and partitions sinfo reports', async () => {
          const sinfo = await sinfoNodes();
          const info = select(samples, 'slurm_node_info');
          expect(info.map((s) => s.labels.node_name).sort()).toEqual([...sinfo.keys()].sort());
          for (const s of info)
            expect(s.labels.state_base, s.labels.node_name).toBe(
              sinfo.get(s.labels.node_name as string)?.toUpperCase(),
            );
          const first = slurm.nodes[0] as string;
          const last = slurm.nodes[slurm.nodes.length - 1] as string;
          expect(valueOf(samples, 'slurm_node_cpus_total', { node_name: first })).toBe(4);
          expect(valueOf(samples, 'slurm_node_memory_total_bytes', { node_name: first })).toBe(8000 * 2 ** 20);
          expect(select(samples, 'slurm_node_partition', { node_name: last }).map((s) => s.labels.partition)).toEqual([
            'gpu',
          ]);
        });

        it('exports every job squeue lists, with its state, partition, name, user, array identity and CPUs', async () => {
          expectJobsAsSqueue(samples, await squeue(SQUEUE_JOB_FORMAT));
          expect(select(samples, 'slurm_job_info', { job_id: jobs.held as string })[0]?.labels.job_state_reason).toBe(
            'JobHeldUser',
          );
        });

        it('maps running jobs to the nodes squeue shows and counts allocated GPUs', async () => {
          for (const [id, nodes] of await squeue('%A|%N')) {
            if (!nodes) continue;
            const mapped = select(samples, 'slurm_node_job', { job_id: id as string }).map((s) => s.labels.node_name);
            expect(mapped, `job ${id}`).toEqual([nodes]);
          }
          expect(valueOf(samples, 'slurm_job_gpus', { job_id: jobs.gpu as string })).toBe(1);
        });

        it("serves Slurm's native node, job and partition families as sinfo and squeue count them", async () => {
          const distinct = await sinfoNodes();
          expect(valueOf(samples, 'slurm_nodes')).toBe(distinct.size);
          const word: Record<string, string> = { allocated: 'alloc', mixed: 'mixed', idle: 'idle', down: 'down' };
          for (const [sinfoState, native] of Object.entries(word))
            expect(valueOf(samples, `slurm_nodes_${native}`), native).toBe(
              [...distinct.values()].filter((s) => s === sinfoState).length,
            );
          const parts = lines((await slurm.run(['sinfo', '-h', '-o', '%R|%D|%C'])).stdout);
          expect(valueOf(samples, 'slurm_partitions')).toBe(parts.length);
          for (const [p, count, cpus] of parts) {
            const [alloc, idle, , total] = (cpus as string).split('/').map(Number);
            const at = { partition: p as string };
            expect(valueOf(samples, 'slurm_partition_nodes', at), p).toBe(Number(count));
            expect(valueOf(samples, 'slurm_partition_cpus', at), p).toBe(total);
            expect(valueOf(samples, 'slurm_partition_nodes_cpus_alloc', at), p).toBe(alloc);
            expect(valueOf(samples, 'slurm_partition_nodes_cpus_idle', at), p).toBe(idle);
          }
          const jobRows = await squeue('%T|%P|%r', '-t', 'all');
          expect(valueOf(samples, 'slurm_jobs')).toBe(jobRows.length);
          for (const state of new Set(jobRows.map((r) => r[0] as string)))
            expect(valueOf(samples, `slurm_jobs_${state.toLowerCase()}`), state).toBe(
              jobRows.filter((r) => r[0] === state).length,
            );
          expect(valueOf(samples, 'slurm_jobs_hold')).toBe(jobRows.filter((r) => r[2] === 'JobHeldUser').length);
          const cpus = (await squeue('%T|%C')).filter(([s]) => s === 'RUNNING').reduce((a, [, c]) => a + Number(c), 0);
          expect(valueOf(samples, 'slurm_jobs_cpus_alloc')).toBe(cpus);
        });

        it('exports RPC and scheduler statistics as sdiag shows them, the v0.0.40+ ones included', async () => {
          const before = await sdiagCounts(slurm);
          const now = await collect(controller);
          expectSchedulerBetween(now, before, await sdiagCounts(slurm));
          expect(valueOf(now, 'slurm_controller_server_thread_count')).toBeGreaterThan(0);
          const rpc = select(now, 'slurm_controller_rpc_calls_total').filter((s) => s.value > 0);
          expect(rpc.length, 'RPC types with calls').toBeGreaterThan(0);
          expect(select(now, 'slurm_controller_rpc_user_calls_total', { user: 'root' })).toHaveLength(1);
          for (const name of ['slurm_sched_exit_end', 'slurm_bf_exit_end', 'slurm_bf_last_depth', 'slurm_bf_active'])
            expect(select(now, name), name).toHaveLength(1);
        });

        it('serves license pools, reservations and fairshare as scontrol and sshare show them', async () => {
          const lic = scontrolFields(
            (await slurm.run(['scontrol', '-o', 'show', 'licenses'])).stdout.split('\n')[0] as string,
          );
          expect(lic.LicenseName).toBe('fluent');
          for (const [key, name] of [
            ['Total', 'total'],
            ['Used', 'used'],
            ['Free', 'free'],
            ['Reserved', 'reserved'],
          ] as const)
            expect(valueOf(samples, `slurm_license_${name}`, { license: 'fluent' }), key).toBe(Number(lic[key]));
          expect(Number(lic.Used)).toBe(2);
          const res = scontrolFields((await slurm.run(['scontrol', '-o', 'show', 'reservation', RESERVATION])).stdout);
          const info = select(samples, 'slurm_reservation_info', { reservation: RESERVATION });
          expect(info).toHaveLength(1);
          expect(info[0]?.labels.flags).toBe(res.Flags);
          expect(info[0]?.labels.nodes).toBe(res.Nodes);
          expect(valueOf(samples, 'slurm_reservation_nodes', { reservation: RESERVATION })).toBe(Number(res.NodeCnt));
          expect(valueOf(samples, 'slurm_reservation_cores', { reservation: RESERVATION })).toBe(Number(res.CoreCnt));
          expect(valueOf(samples, 'slurm_reservation_start_time_seconds', { reservation: RESERVATION })).toBe(
            Date.parse(`${res.StartTime}`) / 1000,
          );
          const shares = lines((await slurm.run(['sshare', '-a', '-n', '-P', '-o', 'Account,User,RawShares'])).stdout);
          expect(shares.length).toBeGreaterThan(0);
          for (const [account, user, raw] of shares) {
            if (raw === undefined || !/^\d+$/.test(raw)) continue;
            const at = { account: (account as string).trim(), user: user as string };
            expect(valueOf(samples, 'slurm_fairshare_raw_shares', at), JSON.stringify(at)).toBe(Number(raw));
          }
        });

        it('serves QoS and association limits as sacctmgr shows them', async () => {
          const qosCols =
            'Priority,GrpJobs,GrpSubmit,MaxJobsPU,MaxSubmitPU,MaxJobsPA,MaxSubmitPA,MaxWall,GrpWall,UsageFactor,GrpTRES';
          const qos = lines(
            (await slurm.run(['sacctmgr', '-nP', 'show', 'qos', 'normal', `format=${qosCols}`])).stdout,
          )[0] as string[];
          const want: Record<string, number> = {};
          Object.keys(QOS_LIMITS).forEach((k, i) => {
            const cell = qos[i] as string;
            want[QOS_NAMES[k] as string] = k.endsWith('Wall') ? wallSeconds(cell) : Number(cell);
          });
          // GrpSubmitJobs of a QoS has a member from v0.0.42 only.
          if (version < 'v0.0.42') delete want.grp_submit_jobs;
          const got = Object.fromEntries(
            select(samples, 'slurm_qos_limit', { qos: 'normal' }).map((s) => [s.labels.limit, s.value]),
          );
          expect(got).toEqual(want);
          const cpu = valueOf(samples, 'slurm_qos_tres_limit', { qos: 'normal', limit: 'grp_tres', tres: 'cpu' });
          expect(`cpu=${cpu}`).toBe(qos[10]);
          const assocCols = 'User,GrpJobs,MaxJobs,GrpSubmit,MaxSubmit,MaxWall';
          const assoc = lines(
            (await slurm.run(['sacctmgr', '-nP', 'show', 'assoc', 'account=root', `format=${assocCols}`])).stdout,
          ).find((r) => r[0] === '') as string[];
          const wantAssoc: Record<string, number> = {};
          Object.keys(ASSOC_LIMITS).forEach((k, i) => {
            const cell = assoc[i + 1] as string;
            wantAssoc[ASSOC_NAMES[k] as string] = k.endsWith('Wall') ? wallSeconds(cell) : Number(cell);
          });
          const gotAssoc = Object.fromEntries(
            select(samples, 'slurm_association_limit', { account: 'root', user: '' })
              .filter((s) => s.labels.limit !== 'shares' && s.labels.limit !== 'priority')
              .map((s) => [s.labels.limit, s.value]),
          );
          expect(gotAssoc).toEqual(wantAssoc);
        });

        it('reads the same running jobs from slurmdbd with the accounting source', async () => {
          const accounting = runner('accounting', version);
          try {
            const got = await waitFor('slurmdbd to know the running jobs', async () => {
              const s = await collect(accounting);
              return select(s, 'slurm_job_info', { job_id: jobs.running as string }).length ? s : undefined;
            });
            const running = (await squeue('%A|%T')).filter(([, s]) => s === 'RUNNING').map(([id]) => id);
            for (const id of running)
              expect(
                select(got, 'slurm_job_info', { job_id: id as string, job_state: 'RUNNING' }),
                `job ${id}`,
              ).toHaveLength(1);
            expect(valueOf(got, 'slurm_job_gpus', { job_id: jobs.gpu as string })).toBe(1);
          } finally {
            await accounting.shutdown();
          }
        });

        it('logged nothing at warn or above', () => {
          expect(logs).toEqual([]);
        });
      });
    }
  });
}
