/**
 * A closed set in the catalogue is what the docs promise: the compiler already refuses a value
 * outside it (test/telemetry/attribute-values.test.ts); this checks the other way, that each set
 * lists exactly the values the code has, neither fewer nor a value it never gives.
 */
import { describe, expect, it } from 'vitest';
import { DOC_TABLES, values } from '../../scripts/docs-tables.js';
import {
  CLUSTER_EVENT_METRICS,
  CLUSTER_METRICS,
  CLUSTER_SELF_METRICS,
  NATIVE_NODE_STATES,
  RESERVATION_METRICS,
} from '../../src/cluster/metrics.js';
import { nodeStateNames } from '../../src/cluster/observe/native-states.js';
import { FAILURE_KINDS } from '../../src/cluster/http/failure.js';
import { NODE_BASE_STATES } from '../../src/cluster/model.js';
import { SUB_COLLECTORS } from '../../src/cluster/snapshot.js';
import { GPU_STATUSES, PORT_STATUSES } from '../../src/node/join/attribution.js';
import { NODE_METRICS as M, NODE_SELF_METRICS as S } from '../../src/node/metrics.js';
import { QP_DROP_REASONS } from '../../src/node/qp/qp-parse.js';
import { RELATIONS } from '../../src/node/read/pci-topology.js';
import { PUSH_RESULTS } from '../../src/telemetry/pipeline.js';
import { prometheusName, type Point } from '../../src/telemetry/spec.js';
import { expositionKeyErrors, familyKeyErrors } from '../support/catalogue-keys.js';

describe('closed value sets', () => {
  it('equal the values the node agent gives', () => {
    expect(M.portAttribution.values.status).toEqual(PORT_STATUSES);
    expect(M.gpuAttribution.values.status).toEqual(GPU_STATUSES);
    expect(M.gpuHcaLocality.values.relation).toEqual(RELATIONS);
    expect(M.jobGpuHcaLocality.values.relation).toEqual(RELATIONS);
    expect(S.qpDropped.values.reason).toEqual(QP_DROP_REASONS);
    expect(S.otlpExports.values.result).toEqual(PUSH_RESULTS);
  });

  it('equal the values the cluster agent gives', () => {
    expect(CLUSTER_METRICS.nodeInfo.values.state_base).toEqual(NODE_BASE_STATES);
    expect(CLUSTER_EVENT_METRICS.nodeFails.values.state_base).toEqual(NODE_BASE_STATES);
    expect(CLUSTER_SELF_METRICS.collectorErrorKinds.values.kind).toEqual(FAILURE_KINDS);
    expect(CLUSTER_SELF_METRICS.collectorErrorKinds.values.collector).toEqual(SUB_COLLECTORS);
    expect(CLUSTER_SELF_METRICS.collectorDuration.values.collector).toEqual(SUB_COLLECTORS);
    expect(CLUSTER_SELF_METRICS.otlpExports.values.result).toEqual(PUSH_RESULTS);
    const powering = { base: 'IDLE', flags: ['POWERING_DOWN'] } as const;
    expect(nodeStateNames({ state: powering })).toContain('powering_down');
    expect(RESERVATION_METRICS.nodeStates.values.state).toEqual([...NATIVE_NODE_STATES, 'powering_down']);
  });

  it('are declared for keys of their family only, without repeats, and shown in its row', () => {
    for (const specs of Object.values(DOC_TABLES)) {
      for (const spec of specs) {
        const keys = [...spec.attributes, ...(spec.optional?.attributes ?? [])];
        for (const [key, set] of Object.entries(spec.values ?? {})) {
          const name = `${prometheusName(spec)} ${key}`;
          expect(keys, name).toContain(key);
          expect(new Set(set).size, name).toBe(set?.length);
          expect(values(spec), name).toContain(`\`${key}\`: `);
        }
      }
    }
  });
});

describe('the run-time check of the tests', () => {
  it('finds a closed key whose value is outside its set, however the point was built', () => {
    const dp = { device: 'mlx5_0', port: '1' };
    const fam = (status: string) => ({
      spec: M.portAttribution,
      points: [{ attributes: { ...dp, status }, value: 1 } as Point],
    });
    expect(familyKeyErrors([fam('sole')])).toEqual([]);
    expect(familyKeyErrors([fam('Sole')])).toEqual([
      'ib_slurm_port_attribution: status="Sole", not one of sole,shared,idle,nonjob,incomplete',
    ]);
    const sample = (status: string) => ({ name: 'ib_slurm_port_attribution', labels: { ...dp, status }, value: 1 });
    expect(expositionKeyErrors([sample('idle')])).toEqual([]);
    expect(expositionKeyErrors([sample('busy')])).toHaveLength(1);
  });
});
