/**
 * ib_slurm_exporter_cycle_errors_total counts read errors under the kinds its catalogue entry
 * declares; a vanished file is normal and not one of them. A read that finds its file gone is
 * still logged, but never exported as kind="gone".
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startNodeAgent, type NodeAgent } from '../../src/node/agent.js';
import { NODE_SELF_METRICS } from '../../src/node/metrics.js';
import { demoTree } from '../../src/demo/scenarios.js';
import { writeTree } from '../../src/demo/nodetree.js';
import { nodeAgentOptions } from '../support/agents.js';
import { parseExposition } from '../support/exposition.js';
import { tmpDir } from '../support/tmp.js';
import { waitFor } from '../support/tools.js';

let agent: NodeAgent | undefined;
afterEach(async () => {
  await agent?.stop();
  agent = undefined;
});

describe('cycle error kinds', () => {
  it('leaves out a file that is gone (no /proc/devices beside the NVIDIA driver)', async () => {
    const roots = writeTree(tmpDir(), demoTree({ layout: 'v2-sluid', nonJobHolder: false, gpus: true }));
    const devices = path.join(roots.procfs, 'devices');
    expect(fs.existsSync(devices), devices).toBe(true);
    fs.rmSync(devices);
    agent = await startNodeAgent(nodeAgentOptions(roots, { collectionIntervalMs: 3_600_000 }));
    await waitFor('a first cycle', () => agent?.last() !== undefined);
    const gone = agent.last()?.snapshot.problems.filter((p) => p.kind === 'gone') ?? [];
    expect(gone.map((p) => p.example).join()).toContain('devices');
    const res = await fetch(`${agent.monitoringUrl}/metrics`);
    const samples = parseExposition(await res.text()).filter((s) => s.name === 'ib_slurm_exporter_cycle_errors_total');
    const kinds: readonly string[] = NODE_SELF_METRICS.cycleErrors.values.kind;
    expect(samples.filter((s) => !kinds.includes(s.labels.kind ?? '')).map((s) => s.labels)).toEqual([]);
  });
});
