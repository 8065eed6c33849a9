/**
 * Slurm's own families, as the cluster agent computes them from slurmrestd, against slurmctld's
 * own `/metrics/*` (metrics/openmetrics) on a real Slurm 26.05, same cluster state, sample by
 * sample: the family names and types of each path, every sample's name, labels (slurmctld
 * leaves a label with an empty value out) and value. The scenario: running, pending (resources,
 * priority, held, begin time, array tasks held back by the array's limit), a job submitted to two
 * partitions, GPU jobs, completed, failed and cancelled jobs, drained, draining and down nodes,
 * jobs of two accounts and two users, for every data parser 26.05 serves. Pending jobs submitted
 * to several partitions, of equal and of different PriorityTier and of different partition
 * priority, queued, held and waiting for a begin time, check which partition slurmctld counts them
 * in (MULTI). Pending jobs whose node count slurmrestd guesses above the minimum they ask for
 * check which of the two min_job_nodes follows (submitWide).
 *
 * Values that change with every reading are compared only when slurmctld's own value is the
 * same before and after the agent's reading. The differences the agent keeps on purpose are in
 * NOT_COPIED, each with the slurmctld defect behind it and a check of what the agent says instead.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startClusterAgent, type ClusterAgent } from '../../src/cluster/agent.js';
import { NATIVE_PATHS, type NativePath } from '../../src/cluster/observe/native.js';
import { parseExposition, type Sample } from '../support/exposition.js';
import {
  REAL_SLURM_START_TIMEOUT_MS,
  SLURM_RELEASES,
  realSlurmGate,
  startRealSlurm,
  type RealSlurm,
} from '../support/real-slurm.js';
import { realSlurmClient, warnLogger } from '../support/real-slurm-agent.js';
import { waitFor } from '../support/tools.js';

const gate = realSlurmGate('26.05');

/** Families whose value is the time or load of the reading itself: never equal between two readers. */
const READING_ITSELF: Readonly<Record<string, string>> = {
  slurm_sched_stats_timestamp: 'when the statistics were taken: each reader asks at its own second',
  slurm_server_thread_cnt:
    "threads serving RPCs right now: the agent's own /diag (and its parallel /nodes, /jobs) are among them",
};

interface Exposition {
  readonly samples: ReadonlyMap<string, number>;
  readonly types: ReadonlyMap<string, string>;
}

/** One sample's identity: its name and its labels, sorted (slurmctld's order is its hash's). */
function sampleKey(s: Sample): string {
  const labels = Object.entries(s.labels).sort(([a], [b]) => a.localeCompare(b));
  return `${s.name}{${labels.map(([k, v]) => `${k}="${v}"`).join(',')}}`;
}

function readExposition(text: string): Exposition {
  const types = new Map<string, string>();
  for (const m of text.matchAll(/^# TYPE (\S+) (\S+)$/gm)) types.set(m[1] as string, m[2] as string);
  const samples = new Map<string, number>();
  for (const s of parseExposition(text)) {
    const key = sampleKey(s);
    expect(samples.has(key), `${key} twice`).toBe(false);
    samples.set(key, s.value);
  }
  return { samples, types };
}

describe.skipIf(gate.skip)("Slurm's own families on a real Slurm 26.05, against slurmctld's /metrics/*", () => {
  let slurm: RealSlurm;
  const logs: string[] = [];
  /** squeue's view of the settled scenario: id, partition, state, reason. */
  let squeueRows: string[][] = [];
  /** The multi-partition pending jobs: id -> the partition slurmctld is expected to count it in. */
  const MULTI = new Map<string, string>();

  async function sbatch(...args: string[]): Promise<string> {
    const { stdout } = await slurm.run(['sbatch', '--parsable', '-o', '/dev/null', '-e', '/dev/null', ...args]);
    return stdout.trim().split(';')[0] as string;
  }

  const squeue = async (): Promise<string[][]> =>
    (await slurm.run(['squeue', '-h', '-t', 'all', '-o', '%i|%P|%T|%r'])).stdout
      .trim()
      .split('\n')
      .filter(Boolean)
      .map((l) => l.split('|'));

  /** sdiag's cycle counters: main scheduler, backfill. */
  const cycles = async (): Promise<[number, number]> => {
    const out = (await slurm.run(['sdiag'])).stdout;
    const at = out.indexOf('Backfilling stats');
    const total = (text: string): number => Number(/Total cycles:\s*(\d+)/.exec(text)?.[1] ?? Number.NaN);
    return [total(out.slice(0, at)), total(out.slice(at))];
  };

  const nodeState = async (node: string): Promise<string> =>
    (await slurm.run(['sinfo', '-h', '-N', '-n', node, '-o', '%T'])).stdout.trim().split('\n')[0] ?? '';

  beforeAll(async () => {
    // ReturnToService=1: a node an admin sets DOWN stays down (with 2 its slurmd brings it back).
    // PriorityWeightPartition: a job's priority differs between partitions of different PriorityJobFactor.
    const extraConf = `${SLURM_RELEASES['26.05'].extraConf ?? ''}\nReturnToService=1\nPriorityWeightPartition=1000`;
    slurm = await startRealSlurm({ release: '26.05', dbd: true, nodes: 6, env: { REAL_SLURM_EXTRA_CONF: extraConf } });
    const [n1, n2, n3, , , n6] = slurm.nodes as [string, string, string, string, string, string];
    await slurm.run(['sacctmgr', '-i', 'add', 'account', 'phys,chem']);
    await slurm.run(['sacctmgr', '-i', 'add', 'user', 'root', 'account=phys']);
    await slurm.run(['sacctmgr', '-i', 'add', 'user', 'daemon', 'account=chem']);
    await slurm.run(['scontrol', 'update', `nodename=${n3}`, 'state=drain', 'reason=bad dimm']);
    await slurm.run(['scontrol', 'update', `nodename=${n6}`, 'state=down', 'reason=dead psu']);
    const cpu = ['-p', 'cpu', '--chdir=/tmp'];
    const gpu = ['-p', 'gpu', '--chdir=/tmp', '--uid=daemon', '--account=chem'];
    await sbatch(...cpu, '-J', 'ok', '--mem=100', '--wrap', 'exit 0');
    await sbatch(...cpu, '-J', 'fail', '--mem=100', '--wrap', 'exit 3');
    const cancelled = await sbatch(...cpu, '-J', 'cancelled', '--hold', '--mem=100', '--wrap', 'sleep 10');
    await slurm.run(['scancel', cancelled]);
    await sbatch(...cpu, '-J', 'a', '-w', n2, '-c', '2', '--mem=1000', '--wrap', 'sleep 3000');
    await sbatch(...cpu, '-J', 'b', '-w', n1, '-c', '1', '--mem=500', '--wrap', 'sleep 3000');
    await sbatch(...cpu, '-J', 'arr', '--array=0-7%2', '-c', '1', '--mem=100', '--wrap', 'sleep 3000');
    await sbatch(...cpu, '-J', 'big', '-N', '2', '-c', '4', '--mem=4000', '--wrap', 'sleep 10');
    await sbatch(...cpu, '-J', 'small', '-c', '4', '--mem=100', '--wrap', 'sleep 10');
    // Node ranges: slurmctld's max_job_nodes is the largest maximum asked for, min_job_nodes the largest minimum.
    await sbatch(...cpu, '-J', 'held', '--hold', '-N', '1-5', '--mem=100', '--wrap', 'sleep 10');
    await sbatch(...cpu, '-J', 'later', '--begin=now+3600', '-N', '2-4', '--mem=100', '--wrap', 'sleep 10');
    await sbatch(...cpu, '-J', 'phys', '--account=phys', '-c', '1', '--mem=100', '--wrap', 'sleep 3000');
    await sbatch(
      '-p',
      'cpu,gpu',
      '--chdir=/tmp',
      '-J',
      'multi',
      '-N',
      '3',
      '-c',
      '4',
      '--mem=100',
      '--wrap',
      'sleep 9',
    );
    await sbatch(...gpu, '-J', 'g1', '--gres=gpu:1', '-c', '1', '--mem=1000', '--wrap', 'sleep 3000');
    await sbatch(...gpu, '-J', 'g2', '--gpus=2', '-N', '1', '-c', '2', '--mem=2000', '--wrap', 'sleep 3000');
    await sbatch(...gpu, '-J', 'gwait', '--gres=gpu:tesla:2', '-N', '2', '--mem=100', '--wrap', 'sleep 10');
    // Settled: a, b, two array tasks, phys, g1 and g2 run; ok and fail have ended.
    await waitFor(
      'seven jobs running, two finished',
      async () => {
        const states = (await squeue()).map((r) => r[2]);
        const running = states.filter((s) => s === 'RUNNING').length;
        return running === 7 && states.includes('COMPLETED') && states.includes('FAILED') ? true : undefined;
      },
      120_000,
    );
    await slurm.run(['scontrol', 'update', `nodename=${n2}`, 'state=drain', 'reason=bad hca']);
    await waitFor('a draining, a drained and a down node', async () =>
      (await nodeState(n2)) === 'draining' && (await nodeState(n3)) === 'drained' && (await nodeState(n6)) === 'down'
        ? true
        : undefined,
    );
    await submitWide();
    await submitMulti();
    squeueRows = await squeue();
  }, REAL_SLURM_START_TIMEOUT_MS + 240_000);

  /**
   * Pending jobs whose node count slurmrestd guesses above what they ask for (a task count over
   * the CPUs of a node: 4), in a partition of their own. slurmctld's min_job_nodes is the largest
   * minimum asked for (-N, 1 when not given): 2, 1 without the held ones; the guesses are larger.
   */
  async function submitWide(): Promise<void> {
    const [, , , n4, n5, n6] = slurm.nodes as [string, string, string, string, string, string];
    await slurm.run(['scontrol', 'create', 'partitionname=wide', `nodes=${n4},${n5},${n6}`, 'maxtime=INFINITE']);
    const wide = (name: string, ...extra: string[]) =>
      sbatch('-p', 'wide', '--chdir=/tmp', '-J', name, '--mem=100', ...extra, '--wrap', 'sleep 9');
    await wide('wide', '--begin=now+3600', '-n', '8');
    await wide('wideheld', '--hold', '-n', '12');
    await wide('widemin', '--hold', '-N', '2', '-n', '2');
  }

  /**
   * Pending jobs on several partitions (none can run: -N 3 on partitions of three nodes, one of
   * them drained or down), named by the partition slurmctld is expected to count them in, then two
   * passes of each scheduler. `hi` (PriorityTier 3) has the cpu nodes; `fast` (tier 1, as cpu and
   * gpu, PriorityJobFactor 10: a job's priority is higher there) the gpu nodes.
   */
  async function submitMulti(): Promise<void> {
    const [n1, n2, n3, n4, n5, n6] = slurm.nodes as [string, string, string, string, string, string];
    const create = (name: string, nodes: string[], extra: string[]) =>
      slurm.run([
        'scontrol',
        'create',
        `partitionname=${name}`,
        `nodes=${nodes.join(',')}`,
        'maxtime=INFINITE',
        ...extra,
      ]);
    await create('hi', [n1, n2, n3], ['prioritytier=3']);
    await create('fast', [n4, n5, n6], ['priorityjobfactor=10']);
    const multi = (name: string, partitions: string, ...extra: string[]) =>
      sbatch(
        '-p',
        partitions,
        '--chdir=/tmp',
        '-J',
        name,
        '-N',
        '3',
        '-c',
        '4',
        '--mem=100',
        ...extra,
        '--wrap',
        'sleep 9',
      );
    // Equal tiers: tried in the listed order, left at the last.
    MULTI.set(await multi('tie', 'gpu,cpu'), 'cpu');
    // hi's tier is higher: tried first whatever the listed order.
    MULTI.set(await multi('tier', 'cpu,hi'), 'cpu');
    // Equal tiers, the job's priority higher in fast: tried there first.
    MULTI.set(await multi('prio', 'cpu,fast'), 'cpu');
    // Never queued: where submission left it, the first by tier.
    MULTI.set(await multi('tieheld', 'gpu,cpu', '--hold'), 'gpu');
    MULTI.set(await multi('tierheld', 'cpu,hi', '--hold'), 'hi');
    MULTI.set(await multi('tierbegin', 'cpu,hi', '--begin=now+3600'), 'hi');
    // Held once a pass has tried it (evaluated after its submission second): where that pass left it.
    const heldLater = await multi('heldlater', 'cpu,hi');
    MULTI.set(heldLater, 'cpu');
    await waitFor(
      'heldlater evaluated after its submission',
      async () => {
        const show = (await slurm.run(['scontrol', 'show', 'job', heldLater])).stdout;
        const at = (key: string): string => new RegExp(`${key}=(\\S+)`).exec(show)?.[1] ?? '';
        return at('LastSchedEval') > at('SubmitTime') ? true : undefined;
      },
      60_000,
    );
    await slurm.run(['scontrol', 'hold', heldLater]);
    const [main, backfill] = await cycles();
    await waitFor(
      'two cycles of each scheduler after the multi-partition jobs',
      async () => {
        const [m, b] = await cycles();
        return m >= main + 2 && b >= backfill + 2 ? true : undefined;
      },
      60_000,
    );
  }

  afterAll(async () => {
    await slurm?.stop();
  }, 90_000);

  /** The agent as deployed: its HTTP endpoint, one collection published at start. */
  async function startAgent(apiVersion: string): Promise<ClusterAgent> {
    const logger = warnLogger(logs);
    const api = realSlurmClient(slurm, logger, apiVersion);
    const loopback = { host: '127.0.0.1', port: 0 };
    const agent = await startClusterAgent({
      source: {
        api,
        jobSource: 'controller',
        accountingLookbackMs: 3_600_000,
        clusterName: 'native',
        optional: ['partitions'],
      },
      collectionIntervalMs: 3_600_000,
      maxInflight: 1,
      // Default flags: /metrics/jobs-users-accts is served as slurmctld serves it, without --user-account-metrics.
      metrics: loopback,
      monitoring: loopback,
      resource: { serviceName: 'slurm-otel-cluster', serviceVersion: 'test', hostName: 'test' },
      logger,
      close: () => api.close(),
    });
    await agent.ready();
    return agent;
  }

  async function scrape(base: string, path: NativePath): Promise<Exposition> {
    const res = await fetch(`${base}${path}`);
    expect(res.status, `${base}${path}`).toBe(200);
    return readExposition(await res.text());
  }

  const slurmctld = (path: NativePath): Promise<Exposition> => scrape(`http://127.0.0.1:${slurm.ctldPort}`, path);

  /**
   * The differences the agent keeps on purpose: per sample name, the slurmctld defect and a
   * check that the agent's value is the one the name means.
   */
  const NOT_COPIED: Readonly<Record<string, { defect: string; ours: (key: string, value: number) => boolean }>> = {
    // slurmctld tests `state_reason & WAIT_PART_NODE_LIMIT` (a bit of an enum value): any reason
    // whose number has bit 2 set counts. The agent counts PartitionNodeLimit only.
    slurm_partition_jobs_wait_part_node_limit: {
      defect: 'bitwise test of an enum reason',
      ours: (key, value) => {
        const p = /partition="([^"]*)"/.exec(key)?.[1];
        return value === squeueRows.filter((r) => r[1] === p && r[3] === 'PartitionNodeLimit').length;
      },
    },
  };

  /** One reading: slurmctld, the agent, slurmctld again; samples slurmctld changed meanwhile are unstable. */
  async function readBoth(
    version: string,
  ): Promise<{ ours: Map<NativePath, Exposition>; theirs: Map<NativePath, Exposition>; unstable: Set<string> }> {
    const before = new Map<NativePath, Exposition>();
    for (const p of NATIVE_PATHS) before.set(p, await slurmctld(p));
    const agent = await startAgent(version);
    try {
      expect(agent.last()?.failed, logs.slice(-5).join('')).toEqual([]);
      // Scraped as Prometheus would with slurmctld's paths: only host and port differ.
      const ours = new Map<NativePath, Exposition>();
      for (const p of NATIVE_PATHS) ours.set(p, await scrape(agent.metricsUrl, p));
      const theirs = new Map<NativePath, Exposition>();
      const unstable = new Set<string>();
      for (const p of NATIVE_PATHS) {
        const after = await slurmctld(p);
        theirs.set(p, after);
        for (const [k, v] of after.samples) if (before.get(p)?.samples.get(k) !== v) unstable.add(k);
      }
      return { ours, theirs, unstable };
    } finally {
      await agent.stop();
    }
  }

  const nameOf = (key: string): string => key.slice(0, key.indexOf('{'));

  for (const version of ['v0.0.42', 'v0.0.43', 'v0.0.44', 'v0.0.45']) {
    it(`every path, family, type, sample, label and value equals slurmctld's (${version})`, async () => {
      // A backfill cycle between two readings changes the scheduler's figures: read again (bounded).
      let reading = await readBoth(version);
      for (let i = 0; i < 4 && [...reading.unstable].some((k) => !(nameOf(k) in READING_ITSELF)); i++)
        reading = await readBoth(version);
      const { ours, theirs, unstable } = reading;
      const report: string[] = [];
      let compared = 0;
      for (const p of NATIVE_PATHS) {
        const o = ours.get(p) as Exposition;
        const t = theirs.get(p) as Exposition;
        expect([...o.types].sort(), `${p}: family names and types`).toEqual([...t.types].sort());
        expect([...o.samples.keys()].sort(), `${p}: sample names and labels`).toEqual([...t.samples.keys()].sort());
        for (const [key, theirValue] of t.samples) {
          const name = nameOf(key);
          const ourValue = o.samples.get(key) as number;
          if (name in READING_ITSELF || unstable.has(key)) continue;
          compared++;
          if (ourValue === theirValue) continue;
          const known = NOT_COPIED[name];
          if (known?.ours(key, ourValue)) continue;
          report.push(`${p} ${key}: slurmctld ${theirValue}, agent ${ourValue}`);
        }
      }
      expect(report).toEqual([]);
      // The scenario is rich enough to mean something: hundreds of samples, the GPU families set.
      expect(compared).toBeGreaterThan(400);
      const jobs = theirs.get('/metrics/jobs') as Exposition;
      expect(jobs.samples.get('slurm_jobs_gpus_alloc{}')).toBe(3);
      // Pending array tasks count one each (10 records pending, 6 of them one array's tasks).
      expect(jobs.samples.get('slurm_jobs_pending{}')).toBeGreaterThan(
        squeueRows.filter((r) => r[2] === 'PENDING').length,
      );
      // A user's running jobs share a node: the per-user node count is distinct nodes, not a sum.
      const running = (await slurm.run(['squeue', '-h', '-t', 'R', '-u', 'root', '-o', '%N'])).stdout
        .trim()
        .split('\n');
      expect(new Set(running).size, running.join(' ')).toBeLessThan(running.length);
      const users = theirs.get('/metrics/jobs-users-accts') as Exposition;
      expect(users.samples.get('slurm_user_jobs_nodes_alloc{username="root"}')).toBeLessThan(running.length);
      // Node ranges reach max_job_nodes (held 1-5; not held: later 2-4).
      const parts = theirs.get('/metrics/partitions') as Exposition;
      expect(parts.samples.get('slurm_partition_jobs_max_job_nodes{partition="cpu"}')).toBe(5);
      expect(parts.samples.get('slurm_partition_jobs_max_job_nodes_nohold{partition="cpu"}')).toBe(4);
      // The multi-partition jobs count where expected (each partition's pending jobs: MULTI's, the
      // earlier cpu,gpu one's and the single-partition ones squeue lists).
      expect(squeueRows.filter((r) => MULTI.has(r[0] as string)).map((r) => r[2])).toEqual(
        [...MULTI].map(() => 'PENDING'),
      );
      for (const p of ['hi', 'fast']) {
        const expected = [...MULTI.values()].filter((m) => m === p).length;
        expect(parts.samples.get(`slurm_partition_jobs_pending{partition="${p}"}`), p).toBe(expected);
      }
      // Pending jobs' minimum node counts are what they ask for, not slurmrestd's guess (squeue's
      // node count, which the largest of would read higher, held and not).
      expect(parts.samples.get('slurm_partition_jobs_min_job_nodes{partition="wide"}')).toBe(2);
      expect(parts.samples.get('slurm_partition_jobs_min_job_nodes_nohold{partition="wide"}')).toBe(1);
      const guesses = (await slurm.run(['squeue', '-h', '-p', 'wide', '-t', 'PD', '-o', '%D|%r'])).stdout
        .trim()
        .split('\n')
        .map((l) => l.split('|'));
      const largest = (rows: string[][]): number => Math.max(...rows.map((r) => Number(r[0])));
      expect(largest(guesses), guesses.join(' ')).toBeGreaterThan(2);
      expect(largest(guesses.filter((r) => !r[1]?.startsWith('JobHeld'))), guesses.join(' ')).toBeGreaterThan(1);
      const nodes = theirs.get('/metrics/nodes') as Exposition;
      for (const s of ['drained', 'draining', 'down']) expect(nodes.samples.get(`slurm_nodes_${s}{}`), s).toBe(1);
    }, 120_000);
  }
});
