import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  jobCpuCount,
  jobMemoryBytes,
  parseTres,
  parseTresEntries,
  parseTresMemory,
  tresGpuCount,
} from '../../src/cluster/tres.js';

const MiB = 1024 ** 2;

describe('parseTres', () => {
  it('parses the usual controller string', () => {
    const t = parseTres('cpu=4,mem=8G,node=1,billing=4,gres/gpu=2,gres/gpu:tesla=2');
    expect(t).toMatchObject({ cpus: 4, memory_bytes: 8 * 1024 ** 3, nodes: 1, billing: 4, gpus: 2 });
    expect([...t.entries.keys()]).toEqual(['cpu', 'mem', 'node', 'billing', 'gres/gpu', 'gres/gpu:tesla']);
  });

  it('reads memory suffixes as powers of 1024 and a bare number as MiB', () => {
    expect(parseTresMemory('1K')).toBe(1024);
    expect(parseTresMemory('382712M')).toBe(382712 * MiB);
    expect(parseTresMemory('1G')).toBe(1024 * MiB);
    expect(parseTresMemory('2T')).toBe(2 * 1024 ** 4);
    expect(parseTresMemory('1P')).toBe(1024 ** 5);
    expect(parseTresMemory('100')).toBe(100 * MiB);
    expect(parseTresMemory('1.5G')).toBe(1.5 * 1024 * MiB);
    expect(parseTresMemory('8g')).toBe(8 * 1024 * MiB);
    for (const bad of ['', 'G', '1X', '-1G', '1 G G', 'lots']) expect(parseTresMemory(bad), bad).toBeUndefined();
  });

  it('counts GPUs from the untyped total, summing typed entries only without one', () => {
    expect(tresGpuCount(parseTresEntries('gres/gpu=8,gres/gpu:h100=8'))).toBe(8);
    expect(tresGpuCount(parseTresEntries('gres/gpu:h100=4,gres/gpu:a100=2'))).toBe(6);
    expect(tresGpuCount(parseTresEntries('cpu=4,gres/gpumem=80G'))).toBeUndefined();
    expect(tresGpuCount(parseTresEntries('cpu=4'))).toBeUndefined();
    expect(parseTres('cpu=16,mem=191356M,billing=16,gres/gpu=1').gpus).toBe(1);
  });

  it('tolerates empty, null and odd strings', () => {
    for (const s of ['', null, undefined, ',,,', 'garbage', '=5', 'cpu=']) {
      const t = parseTres(s);
      expect(t.cpus).toBeUndefined();
      expect(t.memory_bytes).toBeUndefined();
    }
    expect(parseTres(' CPU = 3 , mem=1G').cpus).toBe(3);
    expect(parseTres('cpu=2,cpu=9').cpus).toBe(2);
    expect(parseTres('cpu=lots').cpus).toBeUndefined();
  });

  it('round-trips any rendered map of counts', () => {
    const key = fc.stringMatching(/^[a-z][a-z/:_0-9]{0,10}$/).filter((k) => k !== 'mem');
    fc.assert(
      fc.property(fc.dictionary(key, fc.nat({ max: 1e9 }), { maxKeys: 8 }), fc.nat({ max: 1e7 }), (counts, memMiB) => {
        const text = [...Object.entries(counts).map(([k, v]) => `${k}=${v}`), `mem=${memMiB}M`].join(',');
        const t = parseTres(text);
        for (const [k, v] of Object.entries(counts)) expect(t.entries.get(k)).toBe(String(v));
        expect(t.memory_bytes).toBe(memMiB * MiB);
      }),
    );
  });
});

describe('job CPU and memory, the way the exporter counts them', () => {
  it('prefers allocated TRES, then requested TRES, then the job fields', () => {
    const both = {
      tres_alloc_str: 'cpu=4,mem=8G',
      tres_req_str: 'cpu=2,mem=1G',
      cpus: 1,
      memory_per_node: 100,
      node_count: 1,
    };
    expect([jobCpuCount(both), jobMemoryBytes(both)]).toEqual([4, 8 * 1024 * MiB]);
    const requested = { ...both, tres_alloc_str: undefined };
    expect([jobCpuCount(requested), jobMemoryBytes(requested)]).toEqual([2, 1024 * MiB]);
    const fields = { cpus: 3, memory_per_node: 100, node_count: 2 };
    expect([jobCpuCount(fields), jobMemoryBytes(fields)]).toEqual([3, 200 * MiB]);
    expect([jobCpuCount({}), jobMemoryBytes({ memory_per_node: 100 })]).toEqual([undefined, undefined]);
  });
});
