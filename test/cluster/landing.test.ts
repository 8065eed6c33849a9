import { describe, expect, it } from 'vitest';
import { Command } from 'commander';
import {
  howToTurnOn,
  LandingRecord,
  MAX_LANDING_ERRORS,
  nodeStateLabel,
  renderClusterLanding,
} from '../../src/cluster/landing.js';
import { SUB_COLLECTORS } from '../../src/cluster/snapshot.js';
import { addClusterOptions } from '../../src/cli/cluster.js';
import type { NodeState, SlurmJob, SlurmNode } from '../../src/cluster/model.js';
import { FakeCluster } from '../../src/demo/fake-cluster.js';
import { registerSecret } from '../../src/log.js';
import { knownTruth } from '../support/fake-cluster-truth.js';

const META = {
  clusterName: 'c1',
  server: 'http://127.0.0.1:1',
  version: 't',
  refreshSeconds: 30,
  enabled: SUB_COLLECTORS,
};
const truth = knownTruth(new FakeCluster({ nodes: 4, seed: 3 }));
const node = (state: NodeState): SlurmNode => ({ ...(truth.nodes[0] as SlurmNode), state });
const job = (state: readonly string[]): SlurmJob => ({ ...(truth.jobs[0] as SlurmJob), state });

describe('cluster landing record', () => {
  it('counts node states by base state and the flags that matter, largest first, with a tone each', () => {
    const r = new LandingRecord();
    r.counted({
      atMs: 0,
      nodes: {
        atMs: 0,
        seq: 1,
        value: [
          node({ base: 'IDLE', flags: [] }),
          node({ base: 'IDLE', flags: ['DRAIN'] }),
          node({ base: 'DOWN', flags: ['NOT_RESPONDING'] }),
          node({ base: 'MIXED', flags: ['DRAIN'] }),
          node({ base: 'IDLE', flags: [] }),
          node({ base: 'ALLOCATED', flags: ['BLOCKED'] }),
        ],
      },
    });
    expect(r.nodeStates).toEqual([
      { state: 'IDLE', count: 2, tone: 'ok' },
      { state: 'ALLOCATED', count: 1, tone: 'busy' },
      { state: 'DOWN+NOT_RESPONDING', count: 1, tone: 'bad' },
      { state: 'IDLE+DRAIN', count: 1, tone: 'bad' },
      { state: 'MIXED+DRAIN', count: 1, tone: 'warn' },
    ]);
    expect(r.jobStates).toBeUndefined();
    expect(nodeStateLabel({ base: 'MIXED', flags: ['MAINTENANCE', 'RESERVED'] })).toBe('MIXED+MAINTENANCE+RESERVED');
  });

  it('counts jobs by base state and keeps the last counts while a sub-collector has no new data', () => {
    const r = new LandingRecord();
    const jobs = {
      atMs: 0,
      seq: 1,
      value: [job(['RUNNING']), job(['PENDING', 'REQUEUED']), job(['RUNNING']), job(['NODE_FAIL']), job([])],
    };
    r.counted({ atMs: 0, jobs });
    r.counted({ atMs: 1 });
    expect(r.jobStates).toEqual([
      { state: 'RUNNING', count: 2, tone: 'busy' },
      { state: 'NODE_FAIL', count: 1, tone: 'bad' },
      { state: 'PENDING', count: 1, tone: 'warn' },
      { state: 'UNKNOWN', count: 1, tone: 'other' },
    ]);
  });

  it('tracks runs, errors, skips, last run and last success per sub-collector', () => {
    const r = new LandingRecord();
    r.runFinished('nodes', 1_000, 40);
    r.runFinished('nodes', 2_000, 75, new Error('boom'));
    r.skipped('nodes');
    expect(r.collectorHealth('nodes')).toEqual({
      runs: 2,
      errors: 1,
      skipped: 1,
      lastEndedAtMs: 2_000,
      lastSuccessAtMs: 1_000,
      lastDurationMs: 75,
    });
    expect(r.collectorHealth('jobs')).toEqual({ runs: 0, errors: 0, skipped: 0 });
    expect(r.lastErrors).toEqual([{ atMs: 2_000, collector: 'nodes', message: 'boom' }]);
  });

  it('says a sub-collector is not served from its first absent run until its endpoint answers', () => {
    const r = new LandingRecord();
    r.absent('licenses', 1_000, 5);
    r.absent('licenses', 601_000, 6);
    expect(r.collectorHealth('licenses')).toEqual({
      runs: 2,
      errors: 0,
      skipped: 0,
      lastEndedAtMs: 601_000,
      lastDurationMs: 6,
      absentSinceMs: 1_000,
    });
    const row = (html: string) => /<tr data-collector="licenses"[^\n]*/.exec(html)?.[0] ?? '';
    expect(row(renderClusterLanding(undefined, META, r))).toContain(
      'data-absent="true"><td>licenses</td><td>not served by this slurmrestd since 1970-01-01T00:00:01.000Z; asked again every 10 minutes',
    );
    r.runFinished('licenses', 1_201_000, 7);
    expect(r.collectorHealth('licenses').absentSinceMs).toBeUndefined();
    expect(row(renderClusterLanding(undefined, META, r))).not.toContain('data-absent');
  });

  it(`keeps the newest ${MAX_LANDING_ERRORS} errors, newest first`, () => {
    const r = new LandingRecord();
    for (let i = 0; i < MAX_LANDING_ERRORS + 5; i++) r.runFinished('jobs', i, 1, `failure ${i}`);
    expect(r.lastErrors.length).toBe(MAX_LANDING_ERRORS);
    expect(r.lastErrors[0]?.message).toBe(`failure ${MAX_LANDING_ERRORS + 4}`);
    expect(r.lastErrors.at(-1)?.message).toBe('failure 5');
  });
});

describe('cluster landing page', () => {
  it('never shows a registered token or a URL password, and escapes what servers and Slurm send', () => {
    const token = 'eyJhbGciOiJIUzI1NiJ9.secret-landing-token';
    registerSecret(token);
    const r = new LandingRecord();
    r.runFinished('jobs', 5_000, 10, new Error(`HTTP 500: invalid token ${token} <script>alert(1)</script>`));
    r.error('publish', 6_000, new Error('POST https://otel:hunter2pass@collector:4318/v1/metrics failed'));
    r.counted({ atMs: 0, jobs: { atMs: 0, seq: 1, value: [job(['<img src=x onerror=alert(1)>'])] } });
    const html = renderClusterLanding(undefined, META, r);
    expect(html).not.toContain(token);
    expect(html).not.toContain('hunter2pass');
    expect(html).not.toMatch(/<script>|<img/);
    expect(html).toContain('invalid token &#60;redacted&#62; &#60;script&#62;');
    expect(html).toContain('https://otel:&#60;redacted&#62;@collector');
    expect(html).toContain('<tr data-state="&#60;img src=x onerror=alert(1)&#62;" data-count="1" data-tone="other">');
  });

  it('draws one bar per state, to scale, and says when there is no data yet', () => {
    const r = new LandingRecord();
    r.counted({
      atMs: 0,
      nodes: {
        atMs: 0,
        seq: 1,
        value: [
          node({ base: 'IDLE', flags: [] }),
          node({ base: 'IDLE', flags: [] }),
          node({ base: 'IDLE', flags: [] }),
          node({ base: 'DOWN', flags: [] }),
        ],
      },
    });
    const html = renderClusterLanding(undefined, META, r);
    expect([...html.matchAll(/<rect x="0" y="0" width="(\d+)"/g)].map((m) => Number(m[1]))).toEqual([180, 60]);
    expect(html).toContain('<h2>Node states (4)</h2>');
    expect(html).toContain('<p id="job-states">No data yet.</p>');
    expect(html).toContain('<p id="no-errors">');
  });

  const row = (html: string, name: string): string =>
    new RegExp(`<tr data-collector="${name}"[^\\n]*`).exec(html)?.[0] ?? '';

  it('says how to turn on a sub-collector that is off, and "no data yet" only for one that is on', () => {
    const enabled = ['nodes', 'jobs', 'diag', 'partitions', 'shares'] as const;
    const html = renderClusterLanding(undefined, { ...META, enabled }, new LandingRecord());
    expect(row(html, 'licenses')).toContain(
      'data-off="true"><td>licenses</td><td>off (how to turn on: <code>--optional-collectors partitions,licenses,shares</code>)</td>',
    );
    expect(row(html, 'reservations')).toContain(
      'off (how to turn on: <code>--optional-collectors partitions,reservations,shares</code>)',
    );
    expect(row(html, 'limits')).toContain('off (how to turn on: <code>--accounting-limits</code>)');
    expect(row(html, 'topology')).toContain('--optional-collectors partitions,shares,topology, with Kubernetes access');
    for (const on of enabled) {
      expect(row(html, on)).toContain('<td>no data yet</td>');
      expect(row(html, on)).not.toContain('data-off');
    }
    expect(html).not.toMatch(/off \(how to turn on[^\n]*no data yet/);
  });

  it('names only flags the cluster command has', () => {
    const cluster = addClusterOptions(new Command('cluster'));
    const flags = new Set(cluster.options.map((o) => o.long));
    const named = SUB_COLLECTORS.flatMap((c) => howToTurnOn(c, []) ?? '')
      .join(' ')
      .match(/--[a-z-]+/g);
    expect(named?.length).toBeGreaterThan(0);
    for (const flag of named ?? []) expect(flags, flag).toContain(flag);
  });
});
