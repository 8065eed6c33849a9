import fs from 'node:fs';
import path from 'node:path';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startClusterAgent, type ClusterAgent } from '../../src/cluster/agent.js';
import type { FakeSlurmrestd } from '../../src/demo/fake-slurmrestd.js';
import type { NodeAgent } from '../../src/node/agent.js';
import { CounterDrift, demoTree } from '../../src/demo/scenarios.js';
import { writeTree } from '../../src/demo/nodetree.js';
import { clusterAgentOptions, fakeSlurm, startTestNodeAgent } from '../support/agents.js';
import { tmpDir } from '../support/tmp.js';
import { findTool, shouldRun, toolPath } from '../support/tools.js';

const chromiumTool = findTool('chromium', 'chromium');
const ARTIFACTS = path.resolve('test-artifacts');
const TOKEN = 'landing-browser-token';
/** Cycles with moving counters before the node page is looked at: enough for several rate steps. */
const CYCLES = 5;

async function screenshot(page: import('playwright-core').Page, name: string): Promise<void> {
  fs.mkdirSync(ARTIFACTS, { recursive: true });
  const file = path.join(ARTIFACTS, name);
  await page.screenshot({ path: file, fullPage: true });
  expect(fs.statSync(file).size).toBeGreaterThan(1000);
}

describe.runIf(shouldRun(chromiumTool))('landing pages in headless Chromium', () => {
  let agent: NodeAgent;
  let cluster: ClusterAgent;
  let server: FakeSlurmrestd;
  let browser: Browser;

  beforeAll(async () => {
    const roots = writeTree(tmpDir(), demoTree({ layout: 'v2-sluid', nonJobHolder: true }));
    const drift = new CounterDrift(roots.sysfs);
    drift.tick(5);
    // Rates need time between readings: the agent's clock moves a second per cycle, and the drift
    // moves the counters as that second of traffic would.
    let clockMs = Date.parse('2026-01-01T00:00:00Z');
    agent = await startTestNodeAgent(roots, {
      collector: { roots, fdRescanIntervalMs: 60_000, now: () => clockMs },
    });
    for (let i = 0; i < CYCLES; i++) {
      clockMs += 1000;
      drift.tick(1);
      await agent.cycleNow();
    }
    const slurm = await fakeSlurm(['v0.0.44'], TOKEN);
    server = slurm.server;
    cluster = await startClusterAgent(clusterAgentOptions(slurm, TOKEN));
    await cluster.ready();
    browser = await chromium.launch({
      executablePath: toolPath(chromiumTool),
      args: [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
      ],
    });
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await agent?.stop();
    await cluster?.stop();
    await server?.close();
  });

  it('shows the shared port as shared with both job ids, and links to /metrics and /health', async () => {
    const page = await browser.newPage({ viewport: { width: 1400, height: 700 } });
    const res = await page.goto(`${agent.metricsUrl}/`);
    expect(res?.status()).toBe(200);
    const shared = page.locator('#ports tr[data-device="mlx5_1"]');
    expect(await shared.getAttribute('data-status')).toBe('shared');
    const jobs = await shared.locator('[data-job]').evaluateAll((els) => els.map((e) => e.getAttribute('data-job')));
    expect(jobs).toEqual(['918002', '918003']);
    expect(await shared.textContent()).toContain('2 jobs hold the device');
    expect(await page.locator('#ports tr[data-device="mlx5_3"]').getAttribute('data-status')).toBe('nonjob');
    expect(await page.locator('a[href="/metrics"]').count()).toBe(1);
    expect(await page.locator('a[href="/health"]').count()).toBe(1);
  });

  it('draws a transmit and a receive sparkline per port, and error sparklines where the port counts errors', async () => {
    const page = await browser.newPage({ viewport: { width: 1400, height: 700 } });
    await page.goto(`${agent.metricsUrl}/`);
    const rows = page.locator('#motion tbody tr');
    expect(await rows.count()).toBe(4);
    for (const key of ['mlx5_0/1', 'mlx5_1/1', 'mlx5_2/1', 'mlx5_3/1']) {
      for (const rate of ['tx_bytes', 'rx_bytes']) {
        const cell = page.locator(`#motion tr[data-motion="${key}"] td[data-rate="${rate}"]`);
        // One point per pair of consecutive cycles: the agent's first cycle at start, then CYCLES more.
        const d = (await cell.locator('svg path').getAttribute('d')) ?? '';
        expect(d.match(/[ML]/g)?.length, `${key} ${rate}`).toBe(CYCLES);
        expect(await cell.textContent()).toMatch(/\d(\.\d+)? [kMGT]?B\/s/);
        const box = await cell.locator('svg').boundingBox();
        expect(box?.width).toBeGreaterThan(50);
      }
    }
    const seq = page.locator('#motion tr[data-motion="mlx5_1/1"] [data-counter="packet_seq_err"]');
    expect(await seq.locator('svg path').count()).toBe(1);
    expect(Number((await seq.textContent())?.match(/packet_seq_err (\d+(\.\d+)?)/)?.[1])).toBeGreaterThan(0);
    // The demo writes every error counter, most of them staying at 0: drawn flat along the bottom.
    const names = await page
      .locator('#motion tr[data-motion="mlx5_3/1"] [data-counter]')
      .evaluateAll((els) => els.map((e) => e.getAttribute('data-counter')));
    expect(names).toEqual([
      'symbol_error',
      'link_downed',
      'port_rcv_errors',
      'port_xmit_discards',
      'packet_seq_err',
      'out_of_sequence',
      'local_ack_timeout_err',
      'rnr_nak_retry_err',
    ]);
    const flat =
      (await page
        .locator('#motion tr[data-motion="mlx5_3/1"] [data-counter="symbol_error"] svg path')
        .getAttribute('d')) ?? '';
    expect(flat).toMatch(/^M0 14( L[\d.]+ 14)+$/);
    expect(await seq.getAttribute('class')).toBe('err moved');
    expect(
      await page.locator('#motion tr[data-motion="mlx5_3/1"] [data-counter="symbol_error"]').getAttribute('class'),
    ).toBe('err');
    expect(
      await page.locator('#motion tr[data-motion="mlx5_3/1"] [data-counter="symbol_error"]').textContent(),
    ).toContain('symbol_error 0 /s');
    await screenshot(page, 'landing-node.png');
  });

  it('lists each job with its own series with its bytes so far and its rates', async () => {
    const page = await browser.newPage({ viewport: { width: 1400, height: 700 } });
    await page.goto(`${agent.metricsUrl}/`);
    const sole = agent.last()?.attribution.verdicts.filter((v) => v.status === 'sole') ?? [];
    expect(sole.length).toBeGreaterThan(0);
    const rows = page.locator('#jobs tbody tr');
    expect(await rows.count()).toBe(sole.length);
    for (const v of sole) {
      const row = page.locator(`#jobs tr[data-sole-job="${v.soleJobId}"][data-motion="${v.device}/${v.port}"]`);
      expect(await row.locator('td[data-total="tx_bytes"]').textContent()).toMatch(/^\d+(\.\d+)? [kMGT]?B$/);
      expect(await row.locator('td[data-rate="tx_bytes"] svg path').count()).toBe(1);
    }
  });

  it('shows node and job state bars, sub-collector health and no errors on the cluster page', async () => {
    const page = await browser.newPage({ viewport: { width: 1400, height: 700 } });
    const res = await page.goto(`${cluster.metricsUrl}/`);
    expect(res?.status()).toBe(200);
    const states = page.locator('#node-states tbody tr');
    const counts = await states.evaluateAll((els) => els.map((e) => Number(e.getAttribute('data-count'))));
    expect(counts.reduce((a, b) => a + b, 0)).toBe(12);
    expect(counts.length).toBeGreaterThan(1);
    // Bars are drawn to scale: the largest state has the widest bar.
    const widths = await page
      .locator('#node-states tbody rect')
      .evaluateAll((els) => els.map((e) => Number(e.getAttribute('width'))));
    expect(widths.length).toBe(counts.length);
    expect(Math.max(...widths)).toBe(widths[counts.indexOf(Math.max(...counts))]);
    expect(await page.locator('#job-states tbody tr').count()).toBeGreaterThan(0);
    for (const name of ['nodes', 'jobs', 'diag']) {
      const row = page.locator(`#collectors tr[data-collector="${name}"]`);
      expect(await row.getAttribute('data-ok')).toBe('true');
      expect(await row.locator('[data-runs]').textContent()).toBe('1');
      expect(await row.locator('[data-errors]').textContent()).toBe('0');
    }
    expect(await page.locator('#no-errors').count()).toBe(1);
    expect(await page.content()).not.toContain(TOKEN);
    await screenshot(page, 'landing-cluster.png');
  });
});
