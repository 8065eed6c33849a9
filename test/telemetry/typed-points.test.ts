/** The catalogue types its points: tsc (which checks test/) rejects a wrong or missing key. */
import { describe, expect, it } from 'vitest';
import { NODE_METRICS as M } from '../../src/node/metrics.js';
import { defineMetric, optionalLabels, point } from '../../src/telemetry/spec.js';

const jobKeys = { job_id: '7', device: 'mlx5_0', port: '1', counter: 'port_xmit_data' };

describe('point', () => {
  it('builds a point with exactly the keys of its family', () => {
    expect(point(M.jobCounters, jobKeys, 5n, 1000)).toEqual({ attributes: jobKeys, value: 5n, startTimeMs: 1000 });
    expect(point(M.unattributedJobs, {}, 0)).toEqual({ attributes: {}, value: 0 });
  });

  it('accepts the optional keys of a family, and only with the required ones', () => {
    const meta = { user_name: 'alice', account: 'physics', slurm_partition: 'gpu' };
    expect(point(M.jobCounters, { ...jobKeys, ...meta }, 1n).attributes).toEqual({ ...jobKeys, ...meta });
    // @ts-expect-error: the required keys are still required with the optional ones
    point(M.jobCounters, { job_id: '7', ...meta }, 1n);
  });

  it('rejects a wrong or missing key at compile time', () => {
    // @ts-expect-error: `jobid` is not a key of ib_slurm_job_counters
    point(M.jobCounters, { jobid: '7', device: 'mlx5_0', port: '1', counter: 'x' }, 1n);
    // @ts-expect-error: `counter` is missing
    point(M.jobCounters, { job_id: '7', device: 'mlx5_0', port: '1' }, 1n);
    // @ts-expect-error: a device family has no job_id, and no optional keys
    point(M.deviceTransmitBytes, { device: 'mlx5_0', port: '1', user_name: 'alice' }, 1n);
    const f = optionalLabels(defineMetric('gauge', 'x', '', ['a'], 'x'), ['b'], '--b');
    // @ts-expect-error: `c` is neither required nor optional
    point(f, { a: '1', c: '2' }, 1);
    expect(f.optional).toEqual({ attributes: ['b'], option: '--b' });
  });
});
