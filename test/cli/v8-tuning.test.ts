/**
 * The V8 flags each agent sets on itself after start (cli/v8-tuning.ts): the node agent its own,
 * the cluster agent none, each named in its start-up log line (V8 cannot be asked which hold).
 * That the flag does what it is set for is a figure, not a test: bench/daemon.ts measures it.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { NODE_AGENT_V8_FLAGS } from '../../src/cli/v8-tuning.js';
import { otlpRefused, slurmrestdHanging, type StopCase } from '../support/stop-cases.js';
import { spawnAgent, type AgentChild } from '../support/stopping.js';
import { tmpDir } from '../support/tmp.js';
import { waitFor } from '../support/tools.js';

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** Starts the case's agent and gives its start-up log line, once written. */
async function startedLine(c: StopCase): Promise<Record<string, unknown>> {
  const agent: AgentChild = spawnAgent(c.args);
  cleanups.push(
    () => c.close(),
    () => c.standIns.killAll(),
    async () => {
      agent.signal('SIGTERM');
      const kill = setTimeout(() => agent.signal('SIGKILL'), 10_000);
      await agent.exited;
      clearTimeout(kill);
    },
  );
  return waitFor('the start-up log line', () =>
    agent.logs().find((l) => typeof l.msg === 'string' && / agent started$/.test(l.msg)),
  );
}

describe('V8 flags set by the agents on themselves', () => {
  it('the node agent sets its own and says so at start-up', async () => {
    const line = await startedLine(await otlpRefused(tmpDir()));
    expect(NODE_AGENT_V8_FLAGS).toContain('--optimize-for-size');
    expect(line.v8_flags).toBe(NODE_AGENT_V8_FLAGS.join(' '));
  });

  it('the cluster agent sets none', async () => {
    const line = await startedLine(await slurmrestdHanging(tmpDir()));
    expect(line.msg).toBe('cluster agent started');
    expect(line).not.toHaveProperty('v8_flags');
  });
});
