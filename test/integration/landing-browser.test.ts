import fs from 'node:fs';
import path from 'node:path';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { NodeAgent } from '../../src/node/agent.js';
import { CounterDrift, demoTree } from '../../src/demo/scenarios.js';
import { writeTree } from '../../src/demo/nodetree.js';
import { startTestNodeAgent } from '../support/agents.js';
import { tmpDir } from '../support/tmp.js';
import { findTool, shouldRun, toolPath } from '../support/tools.js';

const chromiumTool = findTool('chromium', 'chromium');
const ARTIFACTS = path.resolve('test-artifacts');

describe.runIf(shouldRun(chromiumTool))('landing page in headless Chromium', () => {
  let agent: NodeAgent;
  let browser: Browser;

  beforeAll(async () => {
    const roots = writeTree(tmpDir(), demoTree({ layout: 'v2-sluid', nonJobHolder: true }));
    new CounterDrift(roots.sysfs).tick(5);
    agent = await startTestNodeAgent(roots);
    await agent.cycleNow();
    browser = await chromium.launch({
      executablePath: toolPath(chromiumTool),
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    });
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await agent?.stop();
  });

  it('shows the shared port as shared with both job ids, and links to /metrics and /health', async () => {
    const page = await browser.newPage({ viewport: { width: 1400, height: 700 } });
    const res = await page.goto(`${agent.metricsUrl}/`);
    expect(res?.status()).toBe(200);
    const shared = page.locator('tr[data-device="mlx5_1"]');
    expect(await shared.getAttribute('data-status')).toBe('shared');
    const jobs = await shared.locator('[data-job]').evaluateAll((els) => els.map((e) => e.getAttribute('data-job')));
    expect(jobs).toEqual(['918002', '918003']);
    expect(await shared.textContent()).toContain('2 jobs hold the device');
    expect(await page.locator('tr[data-device="mlx5_3"]').getAttribute('data-status')).toBe('nonjob');
    expect(await page.locator('a[href="/metrics"]').count()).toBe(1);
    expect(await page.locator('a[href="/health"]').count()).toBe(1);
    fs.mkdirSync(ARTIFACTS, { recursive: true });
    await page.screenshot({ path: path.join(ARTIFACTS, 'node-landing.png'), fullPage: true });
    expect(fs.statSync(path.join(ARTIFACTS, 'node-landing.png')).size).toBeGreaterThan(1000);
  });
});
