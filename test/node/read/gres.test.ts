import fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  expandHostlist,
  expandRange,
  gpuIndices,
  parseSlurmdGpuFiles,
  parseSqueueGpuIndices,
} from '../../../src/node/read/gres.js';

const fixture = (release: string, name: string) =>
  fs.readFileSync(`fixtures/node/slurm-gres/${release}/${name}`, 'utf8');

describe('Slurm GPU GRES, as recorded on real Slurm', () => {
  it('slurmd -G lists the GPU files in GRES index order, whatever its Index= field says', () => {
    // gres.conf names nvidia3 first: Slurm calls it IDX:0 (and its Index= field says 3).
    for (const release of ['22.05', '26.05']) {
      expect(parseSlurmdGpuFiles(fixture(release, 'slurmd-G.txt'))).toEqual({
        files: [
          `/tmp/so-alloc-m${release === '22.05' ? 1 : 2}/dev/nvidia3`,
          `/tmp/so-alloc-m${release === '22.05' ? 1 : 2}/dev/nvidia1`,
        ],
      });
    }
  });

  it('a File= range is expanded in order; a descending one is left unknown', () => {
    expect(parseSlurmdGpuFiles(fixture('22.05', 'slurmd-G-range.txt'))).toHaveProperty('why');
    expect(expandRange('/dev/nvidia[0-2,5]')).toEqual(['/dev/nvidia0', '/dev/nvidia1', '/dev/nvidia2', '/dev/nvidia5']);
    expect(expandRange('/dev/nvidia[3,1]')).toBeUndefined();
  });

  it('squeue --json gives each job its GRES indices on this node only', () => {
    expect([...parseSqueueGpuIndices(fixture('22.05', 'squeue.json'), 'allocm2')]).toEqual([
      ['5000', [0]],
      ['5001', [1]],
    ]);
    expect([...parseSqueueGpuIndices(fixture('22.05', 'squeue.json'), 'allocm1')]).toEqual([]);
    expect([...parseSqueueGpuIndices(fixture('26.05', 'squeue.json'), 'allocn2')]).toEqual([
      ['6000', [0]],
      ['6001', [1]],
    ]);
  });

  it('a multi-node job: the entry of this node, by its place in the host list', () => {
    const json = JSON.stringify({
      jobs: [
        { job_id: 7, nodes: 'r[1-2]n[01-02]', gres_detail: ['gpu:1(IDX:0)', 'gpu:2(IDX:0-1)', 'gpu:a:1(IDX:3)', 'x'] },
        { job_id: 8, nodes: 'r1n02', gres_detail: ['gpu(IDX:N/A)'] },
        { job_id: 9, nodes: 'r1n[01-02]', gres_detail: ['gpu:1(IDX:0)'] },
      ],
    });
    expect([...parseSqueueGpuIndices(json, 'r2n01')]).toEqual([['7', [3]]]);
    expect([...parseSqueueGpuIndices(json, 'r1n02')]).toEqual([
      ['7', [0, 1]],
      ['8', []],
    ]);
    expect(expandHostlist('a[1-2],b7')).toEqual(['a1', 'a2', 'b7']);
    expect(gpuIndices('gpu:tesla:2(IDX:0,2),gpu:a100:1(IDX:3)')).toEqual([0, 2, 3]);
    expect(gpuIndices('gpu:1(IDX:0-x)')).toBeUndefined();
  });
});
