import { describe, expect, it } from 'vitest';
import { demoTree } from '../../src/demo/scenarios.js';
import { writeTree } from '../../src/demo/nodetree.js';
import { cli } from '../support/cli.js';
import { nativeReaderTested } from '../support/fd-reader.js';
import { canMakeDeviceNodes, treeFlags } from '../support/node-tree.js';
import { portTable, scrape, startNodeAgentProcess, type AgentProcess } from '../support/node-agent-process.js';
import { tmpDir } from '../support/tmp.js';
import { waitFor } from '../support/tools.js';

const DEVICES = ['mlx5_0', 'mlx5_1', 'mlx5_2', 'mlx5_3'];

/** The agent's port table once it has collected, and its start-up lines. */
async function tableOf(agent: AgentProcess): Promise<{ table: ReturnType<typeof portTable>; stderr: string }> {
  try {
    const table = await waitFor('a collection with every port judged', async () => {
      const t = portTable(await scrape(agent), DEVICES);
      return Object.values(t.status).every((s) => s !== undefined) ? t : undefined;
    });
    return { table, stderr: agent.stderr() };
  } finally {
    agent.child.kill('SIGTERM');
  }
}

describe('slurm-otel node --fd-reader', () => {
  it.runIf(nativeReaderTested && canMakeDeviceNodes('the agent with each fd reader'))(
    'native (the default) and fs judge the node alike, and the log says which read it',
    async () => {
      const flags = treeFlags(writeTree(tmpDir(), demoTree({ layout: 'v2', nonJobHolder: false })));
      const native = await tableOf(await startNodeAgentProcess(flags));
      const fs = await tableOf(await startNodeAgentProcess([...flags, '--fd-reader', 'fs']));
      expect(native.stderr).toMatch(/fd tables are read by the native reader/);
      expect(fs.stderr).toMatch(/fd tables are read through Node's fs \(--fd-reader fs\)/);
      expect(native.table.status).toEqual({ mlx5_0: 'sole', mlx5_1: 'shared', mlx5_2: 'sole', mlx5_3: 'idle' });
      expect(native.table).toEqual(fs.table);
    },
  );

  it('refuses a reader it does not know, from the flag or the environment, before starting', () => {
    const flag = cli(['node', '--once', '--fd-reader', 'c']);
    expect(flag.code).toBe(2);
    expect(flag.stderr).toMatch(/--fd-reader/);
    const env = cli(['node', '--once'], { IB_SLURM_EXPORTER_FD_READER: 'rust' });
    expect(env.code).toBe(2);
    expect(env.stderr).toMatch(/FD_READER|--fd-reader/);
  });
});
