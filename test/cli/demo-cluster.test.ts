/**
 * The demo shows every cluster family: its cluster agent runs every sub-collector, optional ones
 * included (the fake slurmrestd serves each endpoint; topology comes from a stand-in for the
 * Kubernetes API), so its landing page has no row that is off and each row has data.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDemo, type DemoStack } from '../../src/cli/demo-stack.js';
import { SUB_COLLECTORS } from '../../src/cluster/snapshot.js';
import { DEMO_NODE } from '../../src/demo/scenarios.js';
import { nodeAgentOptions } from '../support/agents.js';
import { parseExposition, select } from '../support/exposition.js';
import { waitFor } from '../support/tools.js';

let demo: DemoStack;

beforeAll(async () => {
  const loopback = { host: '127.0.0.1', port: 0 };
  // startDemo replaces these roots with its synthetic tree.
  const unused = { sysfs: '/nonexistent', procfs: '/nonexistent', cgroupfs: '/nonexistent' };
  demo = await startDemo({
    node: nodeAgentOptions(unused, {
      resource: { serviceName: 'slurm-otel-node', serviceVersion: 'test', hostName: DEMO_NODE },
    }),
    layout: 'v2-sluid',
    nonJobHolder: false,
    tickMs: 1_000,
    cluster: { metrics: loopback, monitoring: loopback },
  });
}, 60_000);

afterAll(async () => {
  await demo?.stop();
});

const rowOf = (html: string, name: string): string =>
  new RegExp(`<tr data-collector="${name}"[^\\n]*`).exec(html)?.[0] ?? `no row for ${name}`;

describe("the demo's cluster agent", () => {
  it('runs every sub-collector, and each has data on the landing page', async () => {
    const url = `${demo.cluster?.metricsUrl ?? 'no cluster agent'}/`;
    const html = await waitFor('every sub-collector with data', async () => {
      const page = await (await fetch(url)).text();
      return SUB_COLLECTORS.every((c) => rowOf(page, c).includes('data-ok="true"')) ? page : undefined;
    });
    for (const c of SUB_COLLECTORS) {
      expect(rowOf(html, c), c).not.toContain('data-off');
      expect(rowOf(html, c), c).toContain('<td>ok</td>');
    }
  });

  it("exports the optional sub-collectors' families", async () => {
    const samples = parseExposition(await (await fetch(`${demo.cluster?.metricsUrl}/metrics`)).text());
    // One family of each optional sub-collector (partitions' are on another path, /metrics/partitions).
    const families = [
      'slurm_license_total',
      'slurm_reservation_nodes',
      'slurm_fairshare_factor',
      'slurm_qos_limit',
      'slurm_association_limit',
      'slurm_node_nvlink_instance_group',
    ];
    for (const family of families) expect(select(samples, family).length, family).toBeGreaterThan(0);
    const placed = select(samples, 'slurm_node_info').filter((s) => s.labels.nodeset_name !== '');
    expect(placed.length).toBeGreaterThan(0);
  });
});
