/**
 * Attributes with a closed set of values declare it in the catalogue: tsc (which checks test/)
 * refuses a point, an event or a self-monitoring record that gives such a key any other value,
 * while the open keys (job_id, device, ...) take any string.
 */
import { describe, expect, it } from 'vitest';
import { CLUSTER_EVENT_METRICS as E, CLUSTER_SELF_METRICS as C } from '../../src/cluster/metrics.js';
import { NODE_METRICS as M, NODE_SELF_METRICS as S } from '../../src/node/metrics.js';
import {
  checkCatalogue,
  closedValues,
  defineMetric,
  event,
  optionalLabels,
  point,
  type AttributesOf,
} from '../../src/telemetry/spec.js';
import type { Recorders } from '../../src/telemetry/selfmon.js';

const dp = { device: 'mlx5_0', port: '1' };
const pair = { UUID: 'GPU-1', pci_bus_id: '00000000:17:00.0', device: 'mlx5_0' };
const gpu = { UUID: 'GPU-1', pci_bus_id: '00000000:17:00.0', device: 'nvidia0', GPU_I_ID: '', compute_instance: '' };

describe('closed attribute values', () => {
  it('builds points whose closed keys carry a declared value', () => {
    expect(point(M.portAttribution, { ...dp, status: 'sole' }, 1).attributes.status).toBe('sole');
    expect(point(M.gpuAttribution, { ...gpu, status: 'unallocated' }, 1).attributes.status).toBe('unallocated');
    expect(M.portAttribution.values.status).toEqual(['sole', 'shared', 'idle', 'nonjob', 'incomplete']);
    const far = { ...pair, relation: 'SYS', gpu_numa_node: '0', hca_numa_node: '1' } as const;
    expect(point(M.gpuHcaLocality, far, 1).attributes).toEqual(far);
  });

  it('refuses a value outside the set at compile time, a literal or a plain string', () => {
    // @ts-expect-error: `exclusive` is not a status of ib_slurm_port_attribution
    point(M.portAttribution, { ...dp, status: 'exclusive' }, 1);
    // @ts-expect-error: `unallocated` is a GPU's status only, not a port's
    point(M.portAttribution, { ...dp, status: 'unallocated' }, 1);
    const read: string = 'sole';
    // @ts-expect-error: a value typed only as string may be anything
    point(M.portAttribution, { ...dp, status: read }, 1);
    // @ts-expect-error: relation is one of nvidia-smi's names, in its own case
    point(M.gpuHcaLocality, { ...pair, relation: 'pix', gpu_numa_node: '0', hca_numa_node: '0' }, 1);
    // @ts-expect-error: held is "true" or "false"
    point(M.jobGpuAllocated, { job_id: '7', ...gpu, held: 'yes' }, 1);
  });

  it('keeps the optional keys and the open keys of a family with closed ones', () => {
    const meta = { user_name: 'alice', account: 'physics', slurm_partition: 'gpu' };
    const labels = { job_id: '7', UUID: 'u', pci_bus_id: 'b', device: 'mlx5_0', relation: 'SYS' as const };
    expect(point(M.jobGpuHcaLocality, { ...labels, ...meta }, 0).attributes).toEqual({ ...labels, ...meta });
    const anyDevice: string = 'mlx5_9';
    expect(point(M.portAttribution, { device: anyDevice, port: '2', status: 'idle' }, 1).value).toBe(1);
  });

  it('holds events and self-monitoring records to the same sets', () => {
    const spec = closedValues(defineMetric('counter', 'x', '', ['kind'], 'x'), { kind: ['a', 'b'] });
    expect(event(spec, { kind: 'a' }, 1).attributes).toEqual({ kind: 'a' });
    // @ts-expect-error: `c` is not a kind of x
    event(spec, { kind: 'c' }, 1);
    const record = (_attributes: AttributesOf<typeof S.cycleErrors>): void => undefined;
    record({ source: 'rdma', kind: 'too_large' });
    // @ts-expect-error: `gone` is not counted as a read error
    record({ source: 'cgroup', kind: 'gone' });
    type FdProbes = Parameters<Recorders<typeof S>['fdProbes']['record']>[1];
    const ok: FdProbes = { result: 'timeout' };
    // @ts-expect-error: `hung` is not a result of ib_slurm_exporter_fd_probes
    const bad: FdProbes = { result: 'hung' };
    expect([ok, bad]).toHaveLength(2);
  });

  it('types the node states and sub-collectors of the cluster agent the same way', () => {
    const state = {
      state_base: 'IDLE',
      state_is_drain: 'true',
      state_is_maintenance: 'false',
      state_is_reserved: 'false',
    } as const;
    expect(event(E.nodeFails, { node_name: 'n1', ...state, reason: 'any text' }, 1).attributes.reason).toBe('any text');
    // @ts-expect-error: IDLE+DRAIN is a base state and a flag, not a base state
    event(E.nodeFails, { node_name: 'n1', ...state, state_base: 'IDLE+DRAIN', reason: '' }, 1);
    // @ts-expect-error: the legacy flags are "true" or "false", never empty
    event(E.nodeGpuSeconds, { node_name: 'n1', ...state, state_is_drain: '' }, 60);
    const record = (_attributes: AttributesOf<typeof C.collectorErrorKinds>): void => undefined;
    record({ collector: 'licenses', kind: 'absent' });
    // @ts-expect-error: `accounts` is not a sub-collector
    record({ collector: 'accounts', kind: 'http' });
  });

  it('declares values for optional keys as well, and only for keys the family has', () => {
    const base = optionalLabels(defineMetric('gauge', 'y', '', ['a'], 'y'), ['b'], '--b');
    const spec = closedValues(base, { b: ['on', 'off'] });
    expect(point(spec, { a: 'any', b: 'on' }, 1).attributes).toEqual({ a: 'any', b: 'on' });
    // @ts-expect-error: b is on or off
    point(spec, { a: 'any', b: 'maybe' }, 1);
    // @ts-expect-error: `c` is not a key of y
    closedValues(base, { c: ['x'] });
  });

  it('are checked when a catalogue is, for what the compiler cannot see', () => {
    const base = defineMetric('gauge', 'z', '', ['a'], 'z');
    expect(() => checkCatalogue([closedValues(base, { a: ['x', 'y'] })])).not.toThrow();
    expect(() => checkCatalogue([{ ...base, values: { b: ['x'] } }])).toThrow(/values of b, not one of its keys/);
    expect(() => checkCatalogue([closedValues(base, { a: [] })])).toThrow(/empty set or a repeated value of a/);
    expect(() => checkCatalogue([closedValues(base, { a: ['x', 'x'] })])).toThrow(/repeated value of a/);
  });
});
