import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { NodeAgent } from '../../src/node/agent.js';
import { CounterDrift, demoTree } from '../../src/demo/scenarios.js';
import { writeTree } from '../../src/demo/nodetree.js';
import { startPrometheus, type PrometheusServer } from '../support/prometheus.js';
import { startTestNodeAgent } from '../support/agents.js';
import { tmpDir } from '../support/tmp.js';
import { findTool, run, shouldRun, toolPath } from '../support/tools.js';

const prometheus = findTool('prometheus', 'prometheus');
const promtool = findTool('promtool', 'prometheus');

// Prometheus scrapes in real time: the waits are on its data (generous deadlines), and so are the timeouts.
describe.runIf(shouldRun(prometheus))('node agent scraped by a real Prometheus', { timeout: 90_000 }, () => {
  let agent: NodeAgent;
  let prom: PrometheusServer;
  let timer: NodeJS.Timeout;

  beforeAll(async () => {
    const dir = tmpDir('slurm-otel-prom-');
    const roots = writeTree(dir + '/tree', demoTree({ layout: 'v2-sluid', nonJobHolder: false }));
    const drift = new CounterDrift(roots.sysfs);
    drift.tick(5);
    timer = setInterval(() => drift.tick(0.5), 500);
    agent = await startTestNodeAgent(roots, { collectionIntervalMs: 500 });
    const target = (u: string) => new URL(u).host;
    prom = await startPrometheus(toolPath(prometheus), dir, {
      node: [target(agent.metricsUrl)],
      self: [target(agent.monitoringUrl)],
    });
  });

  afterAll(async () => {
    clearInterval(timer);
    await prom?.stop();
    await agent?.stop();
  });

  it('stores job series under job_id, only for sole users, with rates that move', async () => {
    const rows = await prom.waitFor('rate(ib_slurm_job_counters_total{counter="port_xmit_data"}[5s]) > 0');
    const jobs = new Set(rows.map((r) => r.metric.job_id));
    expect([...jobs].sort()).toEqual(['918001', '918004']);
    expect(rows.every((r) => r.metric.exported_job === undefined)).toBe(true);
  });

  it('stores device series for every port, the shared one included', async () => {
    const rows = await prom.waitFor('ib_slurm_device_counters_total{counter="packet_seq_err"}');
    expect(rows.map((r) => r.metric.device).sort()).toEqual(['mlx5_0', 'mlx5_1', 'mlx5_2', 'mlx5_3']);
    const shared = await prom.waitFor('ib_slurm_port_attribution{status="shared"} == 1');
    expect(shared.map((r) => r.metric.device)).toEqual(['mlx5_1']);
  });

  it('scrapes the self-monitoring endpoint too', async () => {
    const rows = await prom.waitFor('ib_slurm_exporter_cycles_total > 0');
    expect(rows[0]?.metric.job).toBe('self');
    const up = await prom.waitFor('up');
    expect(up.every((r) => r.value[1] === '1')).toBe(true);
  });
});

describe.runIf(shouldRun(promtool))('exposition lint', () => {
  it('passes promtool check metrics with no warnings', async () => {
    const roots = writeTree(tmpDir(), demoTree({ layout: 'v2', nonJobHolder: true }));
    new CounterDrift(roots.sysfs).tick(3);
    const agent = await startTestNodeAgent(roots);
    try {
      await agent.cycleNow();
      for (const url of [`${agent.metricsUrl}/metrics`, `${agent.monitoringUrl}/metrics`]) {
        const text = await (await fetch(url)).text();
        const lint = await run(toolPath(promtool), ['check', 'metrics'], text);
        expect({ url, code: lint.code, out: lint.stdout + lint.stderr }).toEqual({ url, code: 0, out: '' });
      }
    } finally {
      await agent.stop();
    }
  });
});
