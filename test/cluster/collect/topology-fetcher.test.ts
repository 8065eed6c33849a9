/**
 * The topology sub-collector in the fetchers: run only when the operator chose it, its bounded
 * label values counted per response and logged when their count changes.
 */
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import type { SlurmApi } from '../../../src/cluster/fetchers.js';
import { makeFetchers } from '../../../src/cluster/fetchers.js';
import type { TopologyRead } from '../../../src/cluster/kubernetes/topology.js';
import { createLogger } from '../../../src/log.js';

const api = {} as SlurmApi;
const byNode = new Map([['w0', { nodesetName: 'gpu', nvlinkInstanceGroup: 'nvl-1' }]]);

function logged(): { logger: ReturnType<typeof createLogger>; lines: () => string[] } {
  const out: string[] = [];
  const destination = new Writable({ write: (chunk: Buffer, _e, done) => (out.push(chunk.toString()), done()) });
  return { logger: createLogger({ level: 'debug', format: 'json', destination }), lines: () => out };
}

describe('topology fetcher', () => {
  it.each([[undefined], [['partitions' as const]]])('is off unless chosen (optional %j)', (optional) => {
    const { logger } = logged();
    const f = makeFetchers({
      api,
      jobSource: 'controller',
      accountingLookbackMs: 0,
      logger,
      ...(optional ? { optional } : {}),
      topology: () => Promise.resolve({ byNode, adjusted: 0 }),
    });
    expect(f.topology).toBeUndefined();
  });

  it('counts bounded values per response; logs when the count changes, never the value', async () => {
    const { logger, lines } = logged();
    const reads: TopologyRead[] = [
      { byNode, adjusted: 0 },
      { byNode, adjusted: 2, example: 'Node k1 label topology.nebius.com/nvl-instance-group-id (102400 bytes)' },
      { byNode, adjusted: 2, example: 'Node k1 label topology.nebius.com/nvl-instance-group-id (102400 bytes)' },
      { byNode, adjusted: 0 },
    ];
    const counted: [string, number][] = [];
    const f = makeFetchers({
      api,
      jobSource: 'controller',
      accountingLookbackMs: 0,
      logger,
      optional: ['topology'],
      topology: () => Promise.resolve(reads.shift() as TopologyRead),
      onBoundedValues: (collector, n) => counted.push([collector, n]),
    });
    const signal = new AbortController().signal;
    for (let i = 0; i < 4; i++) expect(await f.topology?.(signal)).toBe(byNode);
    expect(counted).toEqual([
      ['topology', 2],
      ['topology', 2],
    ]);
    const warnings = lines().filter((l) => l.includes('label values cut'));
    expect(warnings).toHaveLength(1);
    expect(JSON.parse(warnings[0] as string)).toMatchObject({
      collector: 'topology',
      values: 2,
      first: 'Node k1 label topology.nebius.com/nvl-instance-group-id (102400 bytes)',
      maxBytes: 256,
    });
  });
});
