/**
 * --disable-metrics: the names as an operator writes them, checked against a catalogue; and the
 * pipeline dropping the disabled families on every way out (exposition, sections, OTLP, events).
 */
import { describe, expect, it } from 'vitest';
import {
  CLUSTER_DISABLE_CATALOGUE,
  clusterDisabledMetrics,
  demoDisabledMetrics,
  NODE_DISABLE_CATALOGUE,
  nodeDisabledMetrics,
} from '../../src/cli/disable-metrics.js';
import { ConfigError } from '../../src/cli/common.js';
import { disabledFamilies, editDistance, nearestName } from '../../src/telemetry/disabled.js';
import { Pipeline } from '../../src/telemetry/pipeline.js';
import { defineMetric, event, point, prometheusName, type LazyFamily, type Point } from '../../src/telemetry/spec.js';
import { silentLogger } from '../support/log.js';
import { startReceiver } from '../support/otlp-receiver.js';

const things = defineMetric('counter', 'test_things', '', ['id'], 'Things.');
const level = defineMetric('gauge', 'test_level', '', ['id'], 'A level.');
const fails = defineMetric('counter', 'test_fails', '', ['id'], 'Fails, as events.');
const cycles = defineMetric('counter', 'test_exporter_cycles', '', [], 'Self-monitoring.');
const catalogue = { data: [things, level, fails], self: [cycles] };

describe('disabledFamilies', () => {
  it('takes Prometheus and OTLP names, blanks and none, and gives OTLP names', () => {
    expect([...disabledFamilies('test_things_total, test_level', catalogue)]).toEqual(['test_things', 'test_level']);
    expect([...disabledFamilies('test_things,test_things_total', catalogue)]).toEqual(['test_things']);
    expect(disabledFamilies('', catalogue).size).toBe(0);
    expect(disabledFamilies(' none ', catalogue).size).toBe(0);
    expect(disabledFamilies(',,', catalogue).size).toBe(0);
  });

  it('refuses an unknown name, naming it and the nearest known name when close', () => {
    expect(() => disabledFamilies('test_thing_total', catalogue)).toThrow(
      'unknown metric family test_thing_total (did you mean test_things_total?)',
    );
    expect(() => disabledFamilies('test_level,somethingelse', catalogue)).toThrow(
      /^unknown metric family somethingelse$/,
    );
  });

  it('refuses a self-monitoring family', () => {
    expect(() => disabledFamilies('test_exporter_cycles_total', catalogue)).toThrow(
      'test_exporter_cycles_total is a self-monitoring family: it cannot be disabled',
    );
  });

  it('suggests only a name within a slip of the one given', () => {
    expect(editDistance('kitten', 'sitting')).toBe(3);
    expect(editDistance('', 'abc')).toBe(3);
    expect(nearestName('ib_slurm_device_counter_total', ['ib_slurm_device_counters_total', 'x'])).toBe(
      'ib_slurm_device_counters_total',
    );
    expect(nearestName('abc', ['xyz'])).toBeUndefined();
  });
});

describe('the agents’ catalogues', () => {
  it('node: every data family can be disabled, no self-monitoring one; a config error exits 2', () => {
    const all = NODE_DISABLE_CATALOGUE.data.map(prometheusName).join(',');
    expect(nodeDisabledMetrics(all)?.size).toBe(NODE_DISABLE_CATALOGUE.data.length);
    for (const s of NODE_DISABLE_CATALOGUE.self)
      expect(() => nodeDisabledMetrics(prometheusName(s)), s.name).toThrow(ConfigError);
    expect(() => nodeDisabledMetrics('ib_slurm_device_counter_total')).toThrow(
      '--disable-metrics: unknown metric family ib_slurm_device_counter_total (did you mean ib_slurm_device_counters_total?)',
    );
    // A cluster family is not the node agent's.
    expect(() => nodeDisabledMetrics('slurm_node_cpus')).toThrow(/unknown metric family slurm_node_cpus/);
    expect(nodeDisabledMetrics(undefined)).toBeUndefined();
    expect(nodeDisabledMetrics('none')).toBeUndefined();
  });

  it('cluster: every data family can be disabled, a shared name with its OTLP alias', () => {
    const all = CLUSTER_DISABLE_CATALOGUE.data.map(prometheusName).join(',');
    expect(clusterDisabledMetrics(all)?.size).toBeGreaterThan(100);
    for (const s of CLUSTER_DISABLE_CATALOGUE.self)
      expect(() => clusterDisabledMetrics(prometheusName(s)), s.name).toThrow(ConfigError);
    expect([...(clusterDisabledMetrics('slurm_node_cpus_idle') ?? [])].sort()).toEqual([
      'slurm_node_cpus_idle',
      'slurmctld_node_cpus_idle',
    ]);
    expect(() => clusterDisabledMetrics('ib_slurm_device_counters_total')).toThrow(/unknown metric family/);
  });
});

describe('the demo’s one option for both agents', () => {
  it('gives each agent the names it exports, and refuses a name neither does', () => {
    const d = demoDisabledMetrics('ib_slurm_device_counters_total, slurm_node_info,slurm_node_cpus_idle');
    expect([...(d.node ?? [])]).toEqual(['ib_slurm_device_counters']);
    expect([...(d.cluster ?? [])].sort()).toEqual([
      'slurm_node_cpus_idle',
      'slurm_node_info',
      'slurmctld_node_cpus_idle',
    ]);
    expect(demoDisabledMetrics('slurm_node_info').node).toBeUndefined();
    expect(demoDisabledMetrics(undefined)).toEqual({});
    expect(() => demoDisabledMetrics('slurm_node_infos')).toThrow(
      '--disable-metrics: unknown metric family slurm_node_infos (did you mean slurm_node_info?)',
    );
    expect(() => demoDisabledMetrics('ib_slurm_exporter_cycles_total')).toThrow(/self-monitoring family/);
  });
});

describe('Pipeline with disabled families', () => {
  const resource = { serviceName: 'test', serviceVersion: '0', hostName: 'h' };
  const scope = { name: 't', version: '0' };

  it('drops them from the exposition, a section, the OTLP push and its side scope, and drops their events', async () => {
    const rx = await startReceiver();
    const p = new Pipeline({
      resource,
      scope,
      logger: silentLogger(),
      eventSpecs: [fails],
      otlpSideScope: { name: 'side', version: '0' },
      disabled: new Set(['test_things', 'test_fails']),
      otlp: { url: `${rx.url}/v1/metrics`, protocol: 'http/protobuf', intervalMs: 3_600_000, timeoutMs: 5000 },
    });
    let made = 0;
    // A disabled lazy family is never made.
    const lazy: LazyFamily = {
      spec: things,
      lazy: {
        *[Symbol.iterator](): Iterator<Point> {
          made++;
          yield point(things, { id: '1' }, 1);
        },
      },
    };
    const levels = { spec: level, points: [point(level, { id: '1' }, 5)] };
    p.record([event(fails, { id: '1' }, 1)]);
    await p.publish([lazy, levels], Date.now(), {
      sections: new Map([['/metrics/part', [lazy, levels]]]),
      otlpSide: [lazy, levels],
    });
    await p.flush();
    expect(made).toBe(0);
    for (const text of [p.exposition.text, p.section('/metrics/part').text]) {
      expect(text).toContain('test_level{id="1"} 5');
      expect(text).not.toContain('test_things');
    }
    expect(p.exposition.text).not.toContain('test_fails');
    expect(p.producer.size).toBe(1);
    const pushed = rx.requests.flatMap((r) => r.points.map((x) => x.metric));
    expect(pushed.filter((m) => m === 'test_level')).toHaveLength(2);
    expect(pushed.filter((m) => m !== 'test_level')).toEqual([]);
    await p.shutdown();
    await rx.close();
  });

  it('still refuses an event of a family it was not given', async () => {
    const p = new Pipeline({ resource, scope, logger: silentLogger(), disabled: new Set(['test_level']) });
    expect(() => p.record([event(fails, { id: '1' }, 1)])).toThrow(/was not declared/);
    await p.shutdown();
  });
});
