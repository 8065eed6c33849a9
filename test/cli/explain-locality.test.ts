import { describe, expect, it } from 'vitest';
import { localityView, renderLocality } from '../../src/cli/explain-locality.js';
import { NodeCollector } from '../../src/node/collect.js';
import { demoTree } from '../../src/demo/scenarios.js';
import { writeTree } from '../../src/demo/nodetree.js';
import { tmpDir } from '../support/tmp.js';

describe('explain shows locality', () => {
  it('one line per GPU with its relation to each HCA, and the far job pair named', () => {
    const roots = writeTree(tmpDir(), demoTree({ layout: 'v2', nonJobHolder: true, gpus: true }));
    const c = new NodeCollector({ roots, fdRescanIntervalMs: 60_000, readAllFds: true }).cycle(1000);
    const view = localityView(c);
    expect(view?.gpus[2]).toEqual({
      device: 'nvidia2',
      busId: '0000:9a:00.0',
      numaNode: 1,
      relations: { mlx5_0: 'SYS', mlx5_1: 'SYS', mlx5_2: 'PIX', mlx5_3: 'NODE' },
    });
    const lines = renderLocality(view as NonNullable<typeof view>);
    expect(lines).toContain(
      'locality: nvidia0 (0000:18:00.0, NUMA 0): mlx5_0 PIX, mlx5_1 NODE, mlx5_2 SYS, mlx5_3 SYS',
    );
    expect(lines).toContain('locality: job 918003 holds nvidia2 and mlx5_1: SYS (far: across NUMA nodes)');
    expect(lines).toContain('locality: job 918001 holds nvidia0 and mlx5_0: PIX');
  });

  it('says nothing of locality on a node without GPUs', () => {
    const roots = writeTree(tmpDir(), demoTree({ layout: 'v2', nonJobHolder: true }));
    const c = new NodeCollector({ roots, fdRescanIntervalMs: 60_000 }).cycle(1000);
    expect(localityView(c)).toBeUndefined();
  });
});
