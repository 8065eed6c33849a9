/**
 * The Grafana dashboards in otel-config/grafana/dashboards: their JSON has what Grafana 11
 * provisioning needs, and every PromQL expression of every panel returns data from a real
 * Prometheus scraping the demo (both agents, all four endpoints) at 1 s. The same Prometheus
 * loads otel-config/prometheus/alerts.yml: every rule evaluates cleanly on the demo's data, and
 * the demo's climbing error counters and drained node put alerts in pending.
 */
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDemo, type DemoStack } from '../../src/cli/demo-stack.js';
import { DEMO_NODE } from '../../src/demo/scenarios.js';
import { nodeAgentOptions } from '../support/agents.js';
import {
  ALL,
  DEMO_CHOICES,
  loadDashboards,
  MACROS,
  panelQueries,
  structureProblems,
  substitute,
  variableQuery,
  variableValues,
  templateVariables,
  type Dashboard,
} from '../support/dashboards.js';
import { startPrometheus, type PrometheusServer } from '../support/prometheus.js';
import { findTool, shouldRun, toolPath, waitFor } from '../support/tools.js';
import { tmpDir } from '../support/tmp.js';

const DIR = fileURLToPath(new URL('../../otel-config/grafana/dashboards/', import.meta.url));
const ALERT_RULES = fileURLToPath(new URL('../../otel-config/prometheus/alerts.yml', import.meta.url));
const dashboards = loadDashboards(DIR);
const byFile = (file: string): Dashboard => dashboards.find((d) => d.file === file) as Dashboard;

const values = (d: Dashboard) => ({ ...MACROS, ...variableValues(d.json, DEMO_CHOICES) });

describe('Grafana dashboards (JSON)', () => {
  it('are the three dashboards, with distinct uids', () => {
    expect(dashboards.map((d) => [d.file, d.json.title])).toEqual([
      ['fabric-by-job.json', 'Fabric by job'],
      ['slurm-cluster.json', 'Slurm cluster'],
      ['slurm-scheduler.json', 'Slurm scheduler & partitions'],
    ]);
    expect(new Set(dashboards.map((d) => d.json.uid)).size).toBe(dashboards.length);
  });

  it.each(dashboards.map((d) => [d.file, d] as const))('%s has what Grafana provisioning needs', (_, d) => {
    expect(structureProblems(d.json)).toEqual([]);
  });

  it.each(dashboards.map((d) => [d.file, d] as const))(
    '%s: every panel has targets, every target PromQL with known variables',
    (_, d) => {
      const queries = panelQueries(d.json);
      expect(queries.length).toBeGreaterThan(10);
      for (const q of queries) expect(() => substitute(q.expr, values(d)), `${q.panel} ${q.refId}`).not.toThrow();
    },
  );
});

describe('the dashboard checker itself', () => {
  const ds = { type: 'prometheus', uid: 'prometheus' };
  const panel = (targets: unknown[]) => ({
    id: 2,
    type: 'timeseries',
    title: 'p',
    datasource: ds,
    gridPos: { h: 8, w: 12, x: 0, y: 1 },
    targets,
  });
  const inRow = (p: unknown) => ({
    panels: [{ id: 1, type: 'row', title: 'r', collapsed: true, gridPos: { h: 1, w: 24, x: 0, y: 0 }, panels: [p] }],
  });

  it('finds panels inside collapsed rows and rejects one without targets or with an empty expression', () => {
    expect(panelQueries(inRow(panel([{ refId: 'A', expr: 'up' }])))).toEqual([{ panel: 'p', refId: 'A', expr: 'up' }]);
    expect(() => panelQueries(inRow(panel([])))).toThrow(/has no target/);
    expect(() => panelQueries(inRow(panel([{ refId: 'A', expr: '  ' }])))).toThrow(/empty expression/);
  });

  it('rejects unknown variables and macros, and an All choice without a .* All value', () => {
    expect(substitute('rate(x{d=~"${device}"}[$__rate_interval])', { device: 'mlx5_1', __rate_interval: '20s' })).toBe(
      'rate(x{d=~"mlx5_1"}[20s])',
    );
    expect(() => substitute('x{d=~"$node"}', { device: 'mlx5_1' })).toThrow(/unknown template variable \$node/);
    expect(() => substitute('rate(x[$__rate_interval])', {})).toThrow(/unknown template variable/);
    const dash = { templating: { list: [{ name: 'cluster', type: 'query', includeAll: true }] } };
    expect(() => variableValues(dash, { cluster: ALL })).toThrow(/All value/);
    expect(() => variableValues(dash, {})).toThrow(/no value/);
  });

  it('reports a bad gridPos and a foreign datasource', () => {
    const p = {
      ...panel([{ refId: 'A', expr: 'up' }]),
      gridPos: { h: 8, w: 12, x: 16, y: 1 },
      datasource: { type: 'prometheus', uid: 'other' },
    };
    const problems = structureProblems({ uid: 'u', title: 't', schemaVersion: 39, panels: [p] });
    expect(problems).toEqual([
      expect.stringMatching(/gridPos/),
      expect.stringMatching(/datasource/),
      expect.stringMatching(/datasource/),
    ]);
  });
});

const prometheus = findTool('prometheus', 'prometheus');

// Waits are generous (Prometheus scrapes and evaluates every second in real time); so are timeouts.
describe.runIf(shouldRun(prometheus))(
  'dashboards against the demo scraped by a real Prometheus',
  { timeout: 180_000 },
  () => {
    let demo: DemoStack;
    let prom: PrometheusServer;
    let dir: string;

    beforeAll(async () => {
      dir = tmpDir('slurm-otel-dashboards-');
      const loopback = { host: '127.0.0.1', port: 0 };
      // startDemo replaces these roots with its synthetic tree.
      const unused = { sysfs: '/nonexistent', procfs: '/nonexistent', cgroupfs: '/nonexistent' };
      const node = nodeAgentOptions(unused, {
        collectionIntervalMs: 500,
        resource: { serviceName: 'slurm-otel-node', serviceVersion: 'test', hostName: DEMO_NODE },
      });
      demo = await startDemo({
        node,
        layout: 'v2-sluid',
        nonJobHolder: false,
        tickMs: 250,
        cluster: { metrics: loopback, monitoring: loopback },
      });
      if (!demo.cluster) throw new Error('the demo started no cluster agent');
      const host = (url: string) => new URL(url).host;
      // Job names as in otel-config/prometheus.yml, so up{job=~"slurm-otel.*"} matches as it does there.
      prom = await startPrometheus(
        toolPath(prometheus),
        dir,
        {
          // instance is the bare node name, as otel-config/prometheus.yml relabels it: the GPU row
          // joins the node agent's series with the cluster agent's node_name on it.
          'slurm-otel-node': [{ target: host(demo.node.metricsUrl), labels: { instance: DEMO_NODE } }],
          'slurm-otel-node-self': [host(demo.node.monitoringUrl)],
          'slurm-otel-cluster': [host(demo.cluster.metricsUrl)],
          'slurm-otel-cluster-self': [host(demo.cluster.monitoringUrl)],
        },
        [ALERT_RULES],
      );
      await prom.waitFor('count(up == 1) == 4');
    }, 180_000);

    afterAll(async () => {
      await prom?.stop();
      await demo?.stop();
    });

    it.each(dashboards.map((d) => [d.file, d] as const))(
      '%s: every panel expression returns data',
      async (_, d) => {
        const checks = panelQueries(d.json).map((q) => ({
          name: `${q.panel} [${q.refId}]`,
          expr: substitute(q.expr, values(d)),
          accept: hasData,
        }));
        const missing = await pollUntilData(prom, checks);
        expect(missing, missing.join('\n')).toEqual([]);
      },
      180_000,
    );

    it.each(dashboards.map((d) => [d.file, d] as const))(
      '%s: variable queries list the values the test picks',
      async (_, d) => {
        const vals = values(d);
        const checks = templateVariables(d.json)
          .filter((v) => v.type === 'query')
          .map((v) => {
            const { label, expr } = variableQuery(v);
            const choice = DEMO_CHOICES[String(v.name)];
            const accept = choice === ALL ? hasData : (rows: Row[]) => rows.some((r) => r.metric[label] === choice);
            return { name: `$${String(v.name)}`, expr: substitute(expr, vals), accept };
          });
        const missing = await pollUntilData(prom, checks);
        expect(missing, missing.join('\n')).toEqual([]);
      },
    );

    it('evaluates every alert rule without error on the demo data', async () => {
      // A rule is "unknown" until its group's first evaluation.
      const rules = await waitFor(
        'every rule evaluated once',
        async () => {
          const now = await ruleStates(prom);
          return now.length > 0 && now.every((r) => r.health !== 'unknown') ? now : undefined;
        },
        60_000,
      );
      expect(rules.length).toBeGreaterThanOrEqual(12);
      expect(rules.filter((r) => r.health !== 'ok').map((r) => `${r.name}: ${r.health} ${r.lastError ?? ''}`)).toEqual(
        [],
      );
    });

    it('puts alerts in pending within a minute: the RDMA errors on mlx5_1 and the drained node', async () => {
      const expected = ['IbRdmaErrors', 'SlurmNodeDrainingLong'];
      let pending: Row[] = [];
      await waitFor(
        `${expected.join(' and ')} pending`,
        async () => {
          pending = await prom.query('ALERTS{alertstate="pending"}');
          return expected.every((a) => pending.some((r) => r.metric.alertname === a));
        },
        120_000,
      ).catch(() => undefined); // the assertion below names what is missing
      const names = new Set(pending.map((r) => r.metric.alertname));
      expect([...names].sort()).toEqual(expect.arrayContaining(expected));
      expect(pending.find((r) => r.metric.alertname === 'IbRdmaErrors')?.metric).toMatchObject({
        device: 'mlx5_1',
        port: '1',
        job: 'slurm-otel-node',
        severity: 'warning',
      });
      // Healthy agents: neither down nor stalled.
      expect(names.has('SlurmOtelAgentDown')).toBe(false);
      expect(names.has('SlurmOtelAgentNotCollecting')).toBe(false);
    }, 90_000);

    it('names the jobs sharing a port and the top jobs through slurm_job_info', async () => {
      const d = byFile('fabric-by-job.json');
      const expr = (title: string) =>
        substitute(panelQueries(d.json).find((q) => q.panel === title)?.expr ?? 'absent_panel', values(d));
      const shared = await prom.waitFor(expr('Shared ports and the jobs sharing them'));
      expect(shared.map((r) => [r.metric.device, r.metric.job_id, r.metric.job_name]).sort()).toEqual([
        ['mlx5_1', '918002', 'allreduce-bench'],
        ['mlx5_1', '918003', 'moe-finetune'],
      ]);
      const top = await prom.waitFor(expr('Top jobs by traffic in range'));
      expect(top.map((r) => [r.metric.job_id, r.metric.job_name]).sort()).toEqual([
        ['918001', 'llm-pretrain'],
        ['918004', 'rag-index'],
      ]);
    });

    it('shows GPU holders, status per GPU, and GPUs allocated beside held per job', async () => {
      const d = byFile('fabric-by-job.json');
      const q = (title: string, ref = 'A') =>
        substitute(
          panelQueries(d.json).find((p) => p.panel === title && p.refId === ref)?.expr ?? 'absent_panel',
          values(d),
        );
      const holders = await prom.waitFor(q('GPU holders per job'));
      // The demo's four GPUs: three jobs each alone on one, nvidia3 held by nobody.
      expect(holders.map((r) => [r.metric.job_id, r.metric.device, r.value[1]]).sort()).toEqual([
        ['918001', 'nvidia0', '1'],
        ['918002', 'nvidia1', '1'],
        ['918003', 'nvidia2', '1'],
      ]);
      const status = await prom.waitFor(q('GPU attribution status'));
      expect(status.map((r) => [r.metric.device, r.metric.status]).sort()).toEqual([
        ['nvidia0', 'sole'],
        ['nvidia1', 'sole'],
        ['nvidia2', 'sole'],
        ['nvidia3', 'idle'],
      ]);
      const held = await prom.waitFor(q('GPUs allocated and held per job', 'B'));
      expect(held.map((r) => [r.metric.node_name, r.metric.job_id, r.value[1]]).sort()).toEqual([
        [DEMO_NODE, '918001', '1'],
        [DEMO_NODE, '918002', '1'],
        [DEMO_NODE, '918003', '1'],
      ]);
      // 918003 runs its RDMA through mlx5_1, across the NUMA nodes from its GPU.
      const pairs = await prom.waitFor(q('GPU–HCA pairs per job'));
      expect(pairs.map((r) => [r.metric.job_id, r.metric.device, r.metric.relation]).sort()).toEqual([
        ['918001', 'mlx5_0', 'PIX'],
        ['918002', 'mlx5_1', 'PIX'],
        ['918003', 'mlx5_1', 'SYS'],
      ]);
      const allocated = await prom.waitFor(q('GPUs allocated and held per job', 'A'));
      expect(allocated.find((r) => r.metric.job_id === '918001')?.metric.node_name).toBe(DEMO_NODE);
    });

    it("shows the selected job's memory against its cgroup limit, by node and through the recording rule", async () => {
      const d = byFile('fabric-by-job.json');
      const q = (title: string, ref: string) =>
        substitute(
          panelQueries(d.json).find((p) => p.panel === title && p.refId === ref)?.expr ?? 'absent_panel',
          values(d),
        );
      // The demo's 918001 uses 61 GiB of its 64 GiB cgroup limit (DEMO_USAGE).
      const limit = await prom.waitFor(q('Job $job_id: memory by node', 'C'));
      expect(limit.map((r) => [r.metric.instance, Number(r.value[1])])).toEqual([[DEMO_NODE, 64 * 2 ** 30]]);
      const ratio = await prom.waitFor(q('Job $job_id: CPU and memory efficiency', 'C'));
      expect(ratio.map((r) => r.metric.node_name)).toEqual([DEMO_NODE]);
      expect(Number(ratio[0]?.value[1])).toBeCloseTo(61 / 64, 6);
    });

    it("shows the selected job's CPU efficiency on each node, and the CPUs allocated there", async () => {
      const d = byFile('fabric-by-job.json');
      const q = (title: string, ref: string) =>
        substitute(
          panelQueries(d.json).find((p) => p.panel === title && p.refId === ref)?.expr ?? 'absent_panel',
          values(d),
        );
      // The demo's 918001 has the cpuset 0-15 and keeps CPUs busy (DEMO_CPU_RATES).
      const allocated = await prom.waitFor(q('Job $job_id: CPUs busy and allocated by node', 'B'));
      expect(allocated.map((r) => [r.metric.node_name, r.metric.job_id, Number(r.value[1])])).toEqual([
        [DEMO_NODE, '918001', 16],
      ]);
      const busy = await prom.waitFor(q('Job $job_id: CPUs busy and allocated by node', 'A'));
      expect(busy.map((r) => r.metric.node_name)).toEqual([DEMO_NODE]);
      const efficiency = await prom.waitFor(q('Job $job_id: CPU efficiency by node', 'A'));
      expect(efficiency.map((r) => [r.metric.node_name, r.metric.job_id])).toEqual([[DEMO_NODE, '918001']]);
      expect(Number(efficiency[0]?.value[1])).toBeGreaterThan(0);
    });

    it('shows each job sharing mlx5_1 its own QP counters, bytes and coverage', async () => {
      const d = byFile('fabric-by-job.json');
      const expr = (title: string) =>
        substitute(panelQueries(d.json).find((q) => q.panel === title)?.expr ?? 'absent_panel', values(d));
      const bytes = await prom.waitFor(expr('QP bytes/s by job, shared ports too'));
      expect(bytes.map((r) => [r.metric.job_id, r.metric.device]).sort()).toEqual([
        ['918002', 'mlx5_1'],
        ['918003', 'mlx5_1'],
      ]);
      // 918002 moves 480 + 450 MB/s against 918003's 190 MB/s in the demo.
      const rate = (job: string) => Number(bytes.find((r) => r.metric.job_id === job)?.value[1]);
      expect(rate('918002')).toBeGreaterThan(rate('918003'));
      const coverage = await prom.waitFor(expr('QP counter coverage by job'));
      expect(coverage.map((r) => [r.metric.job_id, Number(r.value[1])]).sort()).toEqual([
        ['918002', 1],
        ['918003', 0.5],
      ]);
    });
  },
);

type Row = { metric: Record<string, string>; value: [number, string] };

interface RuleState {
  readonly name: string;
  readonly health: string;
  readonly lastError?: string;
}

async function ruleStates(prom: PrometheusServer): Promise<RuleState[]> {
  const res = await fetch(`${prom.url}/api/v1/rules`);
  const body = (await res.json()) as { data: { groups: { rules: RuleState[] }[] } };
  return body.data.groups.flatMap((g) => g.rules);
}
interface Check {
  readonly name: string;
  readonly expr: string;
  readonly accept: (rows: Row[]) => boolean;
}

/** At least one sample that is a number: NaN (0/0) draws nothing in Grafana. */
function hasData(rows: Row[]): boolean {
  return rows.some((r) => r.value[1] !== 'NaN');
}

/**
 * Queries every pending check each round until all are accepted or the deadline passes; gives
 * back what never was, with the last answer or error, so one run reports every failure.
 */
async function pollUntilData(prom: PrometheusServer, checks: Check[], timeoutMs = 120_000): Promise<string[]> {
  let pending = checks.map((c) => ({ ...c, last: 'not queried' }));
  const round = async (): Promise<boolean> => {
    const answers = await Promise.all(
      pending.map((c) =>
        prom.query(c.expr).then(
          (rows) => ({ rows, error: '' }),
          (err: Error) => ({ rows: [], error: err.message }),
        ),
      ),
    );
    pending = pending
      .map((c, i) => ({
        ...c,
        ok: c.accept(answers[i]?.rows ?? []),
        last: answers[i]?.error || `${answers[i]?.rows.length ?? 0} rows`,
      }))
      .filter((c) => !c.ok);
    return pending.length === 0;
  };
  await waitFor('every query to give data', round, timeoutMs).catch(() => undefined);
  return pending.map((c) => `${c.name}: ${c.last}: ${c.expr}`);
}
