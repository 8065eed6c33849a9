/**
 * A stop that lands while a cycle reads the node is the ordinary way an agent ends: the cycle is
 * cut at its next pause and that is said at info level, with no error and no stack. A cycle that
 * really fails still logs an error.
 */
import { describe, expect, it } from 'vitest';
import { startNodeAgent } from '../../src/node/agent.js';
import { demoTree } from '../../src/demo/scenarios.js';
import { writeTree } from '../../src/demo/nodetree.js';
import { nodeAgentOptions } from '../support/agents.js';
import { capturingLogger } from '../support/log.js';
import { tmpDir } from '../support/tmp.js';

const CUT = 'cycle in flight cut short by the stop';

describe('a stop during a cycle', () => {
  it('is logged at info level, without an error or a stack', async () => {
    const roots = writeTree(tmpDir(), demoTree({ layout: 'v2-sluid', nonJobHolder: true }));
    const { logger, lines } = capturingLogger();
    // sliceMs 0: the cycle pauses at every process and fd, so it is still reading when stop() is
    // called: only promise callbacks have run since it began, never a turn of the event loop.
    const agent = await startNodeAgent(
      nodeAgentOptions(roots, { logger, collector: { roots, fdRescanIntervalMs: 60_000, sliceMs: 0 } }),
    );
    await agent.stop();
    const cut = lines.filter((l) => l.msg === CUT);
    expect(cut, JSON.stringify(lines)).toHaveLength(1);
    expect(cut[0]?.level).toBe('info');
    expect(lines.filter((l) => l.level === 'error' || l.level === 'fatal')).toEqual([]);
    expect(JSON.stringify(lines)).not.toMatch(/stack|"err"/);
  });

  it('a cycle that really fails is still an error', async () => {
    const roots = writeTree(tmpDir(), demoTree({ layout: 'v2-sluid', nonJobHolder: true }));
    const { logger, lines } = capturingLogger();
    const now = (): number => {
      throw new Error('clock on fire');
    };
    const agent = await startNodeAgent(
      nodeAgentOptions(roots, { logger, collector: { roots, fdRescanIntervalMs: 60_000, now } }),
    );
    await agent.ready();
    await agent.stop();
    const errors = lines.filter((l) => l.level === 'error' && l.msg === 'cycle failed; keeping the last good data');
    expect(errors, JSON.stringify(lines)).toHaveLength(1);
    expect(JSON.stringify(errors[0])).toContain('clock on fire');
    expect(lines.some((l) => l.msg === CUT)).toBe(false);
  });
});
