import { describe, expect, it } from 'vitest';
import { tresListToString } from '../../../../src/cluster/api/decode/decode-tres.js';
import { parseTres } from '../../../../src/cluster/tres.js';

const MiB = 1024 ** 2;

describe('tresListToString', () => {
  it('renders slurmdbd TRES arrays in the controller’s form', () => {
    const list = [
      { type: 'cpu', name: null, id: 1, count: 2 },
      { type: 'mem', name: '', id: 2, count: 2000 },
      { type: 'energy', name: null, id: 3, count: null },
      { type: 'node', id: 4, count: 1 },
      { type: 'gres', name: 'gpu', id: 1001, count: 2 },
      { type: 'gres', name: 'gpu:tesla', id: 1002, count: 2 },
    ];
    const s = tresListToString(list);
    expect(s).toBe('cpu=2,mem=2000M,node=1,gres/gpu=2,gres/gpu:tesla=2');
    expect(parseTres(s)).toMatchObject({ cpus: 2, memory_bytes: 2000 * MiB, gpus: 2, nodes: 1 });
  });

  it('accepts no-val struct counts and skips junk', () => {
    expect(
      tresListToString([
        { type: 'cpu', count: { set: true, infinite: false, number: 8 } },
        null,
        'x',
        { count: 3 },
        { type: 'mem', count: -1 },
      ]),
    ).toBe('cpu=8');
    for (const nothing of [[], null, 'cpu=1', {}, [{ type: 'energy', count: null }]])
      expect(tresListToString(nothing)).toBeUndefined();
  });
});
