/** The catalogue types its points: tsc (which checks test/) rejects a wrong or missing key. */
import { describe, expect, it } from 'vitest';
import { NODE_METRICS as M } from '../../src/node/metrics.js';
import { CLUSTER_EVENT_METRICS as E, LIMIT_METRICS as L, NATIVE_USER_METRICS } from '../../src/cluster/metrics.js';
import {
  defineMetric,
  event,
  optionalLabels,
  point,
  type AttributesOf,
  type MetricSpec,
} from '../../src/telemetry/spec.js';
import { expositionKeyErrors, familyKeyErrors } from '../support/catalogue-keys.js';

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

  it('rejects a key that arrives through a spread or a variable, where an object literal alone is not checked', () => {
    const owner = { account: 'physics', user: 'alice', partition: 'gpu' };
    expect(point(L.association, { ...owner, limit: 'max_jobs' }, 10).attributes).toEqual({
      ...owner,
      limit: 'max_jobs',
    });
    const qosOwner = { qos: 'normal', account: 'physics' };
    // @ts-expect-error: `account` is not a key of slurm_qos_limit, though it comes in a spread
    point(L.qos, { ...qosOwner, limit: 'grp_jobs' }, 10);
    const attributes = { qos: 'normal', limit: 'grp_tres', tres: 'cpu', node: 'n1' };
    // @ts-expect-error: `node` is not a key of slurm_qos_tres_limit, though the value is a variable
    point(L.qosTres, attributes, 64);
    const { user: _user, ...noUser } = owner;
    // @ts-expect-error: `user` is missing from the spread
    point(L.association, { ...noUser, limit: 'max_jobs' }, 10);
    const meta: { user_name?: string; cluster?: string } = {};
    // @ts-expect-error: an optional key the family does not declare (`cluster`) is refused too
    point(M.jobProcesses, { job_id: '7', ...meta }, 1);
    const labels: Record<string, string> = { username: 'alice' };
    // @ts-expect-error: attributes typed by string keys carry any key
    point(NATIVE_USER_METRICS.jobs, labels, 1);
    // @ts-expect-error: events are held to the same rule
    event(E.nodeDraining, { ...{ node_name: 'n1', node: 'n1' } }, 30);
  });

  it('lets a helper that builds points of any family pass attributes typed by that family', () => {
    const helper = <S extends MetricSpec>(spec: S, attributes: AttributesOf<S>) => point(spec, attributes, 1);
    expect(helper(L.qos, { qos: 'normal', limit: 'grp_jobs' }).attributes).toEqual({
      qos: 'normal',
      limit: 'grp_jobs',
    });
  });

  it('types the events of the cluster agent the same way', () => {
    expect(event(E.nodeDraining, { node_name: 'n1' }, 30)).toEqual({
      spec: E.nodeDraining,
      value: 30,
      attributes: { node_name: 'n1' },
    });
    // @ts-expect-error: the draining histogram is labelled by node_name, not node
    event(E.nodeDraining, { node: 'n1' }, 30);
  });
});

describe('the run-time key check of the tests', () => {
  const sample = (name: string, labels: Record<string, string>) => ({ name, labels, value: 1 });

  it('finds a missing key, an extra key, optional keys where their option is off, and unknown families', () => {
    const meta = { user_name: 'a', account: 'b', slurm_partition: 'c' };
    const fam = (attributes: Record<string, string>) => ({ spec: M.jobCounters, points: [{ attributes, value: 1n }] });
    expect(familyKeyErrors([fam(jobKeys)])).toEqual([]);
    expect(familyKeyErrors([fam({ ...jobKeys, ...meta })], true)).toEqual([]);
    expect(familyKeyErrors([fam({ ...jobKeys, ...meta })])).toHaveLength(1);
    expect(familyKeyErrors([fam(jobKeys)], true)).toHaveLength(1);
    expect(familyKeyErrors([fam({ ...jobKeys, user_name: 'a' })], true)).toHaveLength(1);
    expect(familyKeyErrors([fam({ job_id: '7', device: 'd', port: '1' })])).toEqual([
      'ib_slurm_job_counters: keys device,job_id,port, expected counter,device,job_id,port',
    ]);
    expect(expositionKeyErrors([sample('ib_slurm_job_counters_total', { ...jobKeys, extra: 'x' })])).toHaveLength(1);
    expect(expositionKeyErrors([sample('ib_slurm_nothing', {})])).toEqual(['ib_slurm_nothing: not in any catalogue']);
  });

  it('reads histogram series by their family, le aside', () => {
    const buckets = { node_name: 'n1', le: '30' };
    expect(expositionKeyErrors([sample('slurm_node_unavailability_duration_seconds_bucket', buckets)])).toEqual([]);
    expect(expositionKeyErrors([sample('slurm_node_unavailability_duration_seconds_sum', buckets)])).toHaveLength(1);
  });
});
