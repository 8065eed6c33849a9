import fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  expandHostlist,
  expandRange,
  gpuIndices,
  parseSlurmdGpuFiles,
  parseScontrolGpuIndices,
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

  it('scontrol show job -d gives a job its GRES indices on this node only', () => {
    expect(parseScontrolGpuIndices(fixture('22.05', 'scontrol-show-job-d-5000.txt'), 'allocm2')).toEqual([0]);
    expect(parseScontrolGpuIndices(fixture('22.05', 'scontrol-show-job-d-5001.txt'), 'allocm2')).toEqual([1]);
    expect(parseScontrolGpuIndices(fixture('26.05', 'scontrol-show-job-d-6000.txt'), 'allocn2')).toEqual([0]);
    expect(parseScontrolGpuIndices(fixture('26.05', 'scontrol-show-job-d-6001.txt'), 'allocn2')).toEqual([1]);
    // Another node: the job names it in no Nodes= line, so nothing is known of it there.
    expect(parseScontrolGpuIndices(fixture('22.05', 'scontrol-show-job-d-5000.txt'), 'allocm1')).toBeUndefined();
  });

  it('a multi-node job: the Nodes= line whose host list names this node', () => {
    const text = [
      'JobId=7 JobName=x',
      '   NodeList=r[1-2]n[01-02]',
      '   JOB_GRES=gpu:4',
      '     Nodes=r1n01 CPU_IDs=0-3 Mem=0 GRES=gpu:1(IDX:0)',
      '     Nodes=r1n02 CPU_IDs=0-3 Mem=0 GRES=gpu:2(IDX:0-1)',
      '     Nodes=r2n[01-02] CPU_IDs=0 Mem=0 GRES=gpu:a:1(IDX:3),nic:1(IDX:0)',
      '   MinCPUsNode=1',
    ].join('\n');
    expect(parseScontrolGpuIndices(text, 'r2n02')).toEqual([3]);
    expect(parseScontrolGpuIndices(text, 'r1n02')).toEqual([0, 1]);
    expect(parseScontrolGpuIndices(text, 'r3n01')).toBeUndefined();
    expect(expandHostlist('a[1-2],b7')).toEqual(['a1', 'a2', 'b7']);
    expect(gpuIndices('gpu:tesla:2(IDX:0,2),gpu:a100:1(IDX:3)')).toEqual([0, 2, 3]);
    expect(gpuIndices('gpu(IDX:N/A)')).toEqual([]);
    expect(gpuIndices('gpu:1(IDX:0-x)')).toBeUndefined();
  });
});
