/**
 * The alert and recording rules in otel-config/prometheus/alerts.yml: current with their
 * declaration (scripts/alerts.ts), valid for promtool, unit-tested by alerts.test.yml, documented
 * in the runbook in docs/operations.md (alerts) and in docs/node-agent.md (recording rules), and
 * reading only metrics that exist or that a rule records.
 */
import fs from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import {
  ALERT_GROUPS,
  ALERT_RULES_FILE,
  RECORDING_RULES,
  THRESHOLDS,
  recordingRulesDoc,
  renderAlertRules,
  runbook,
  thresholdsTable,
} from '../../scripts/alerts.js';
import { DOC_FILES, DOC_TABLES, section } from '../../scripts/docs-tables.js';
import { prometheusName, type MetricSpec } from '../../src/telemetry/spec.js';
import { findTool, run, shouldRun, toolPath } from '../support/tools.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const read = (rel: string): string => fs.readFileSync(`${ROOT}${rel}`, 'utf8');
const TESTS_FILE = 'otel-config/prometheus/alerts.test.yml';

/** Names from outside the catalogues: Prometheus's own `up`. (The collector's are matched by __name__ regex.) */
const EXTERNAL = ['up'];
/**
 * Node-agent families the GPU attribution will export (issue 34, holders per job and GPU) that a
 * rule reads before their catalogue declares them. A name leaves this list once it is declared.
 */
const PLANNED: string[] = [];

interface Rule {
  alert: string;
  expr: string;
  for?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}
interface Recorded {
  record: string;
  expr: string;
}
const allRules = (): (Rule | Recorded)[] =>
  (parse(read(ALERT_RULES_FILE)) as { groups: { rules: (Rule | Recorded)[] }[] }).groups.flatMap((g) => g.rules);
const rules = (): Rule[] => allRules().filter((r): r is Rule => 'alert' in r);
const records = (): Recorded[] => allRules().filter((r): r is Recorded => 'record' in r);

/** Every exposed sample name of every catalogue family (histograms as their _bucket/_sum/_count). */
function knownNames(): Set<string> {
  const specs: MetricSpec[] = Object.values(DOC_TABLES).flat();
  const names = specs.flatMap((s) =>
    s.kind === 'histogram' ? ['_bucket', '_sum', '_count'].map((x) => s.name + x) : [prometheusName(s)],
  );
  return new Set([...names, ...EXTERNAL, ...RECORDING_RULES.map((r) => r.record)]);
}

const FUNCTIONS_AND_KEYWORDS = new Set([
  'by',
  'without',
  'on',
  'ignoring',
  'group_left',
  'group_right',
  'and',
  'or',
  'unless',
  'bool',
  'offset',
]);

/**
 * The metric names a PromQL expression selects: identifiers outside strings, label matchers and
 * grouping lists that are not functions.
 */
export function metricNames(expr: string): string[] {
  const bare = expr
    .replace(/"(?:[^"\\]|\\.)*"/g, '""')
    .replace(/\{[^}]*\}/g, '')
    .replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, '')
    .replace(/\[[^\]]*\]/g, '')
    .replace(/\boffset\s+-?\w+/g, '');
  const out: string[] = [];
  for (const m of bare.matchAll(/([a-zA-Z_:][a-zA-Z0-9_:]*)(\s*\()?/g)) {
    const [, name, call] = m as unknown as [string, string, string | undefined];
    if (call || FUNCTIONS_AND_KEYWORDS.has(name) || /^\d/.test(name)) continue;
    out.push(name);
  }
  return [...new Set(out)];
}

describe('alert rules', () => {
  it('are current: npm run docs writes them from scripts/alerts.ts', () => {
    expect(read(ALERT_RULES_FILE)).toBe(renderAlertRules());
  });

  it('are at least 12, each with a severity, a summary and a description', () => {
    const all = rules();
    expect(all.length).toBeGreaterThanOrEqual(12);
    expect(new Set(all.map((r) => r.alert)).size).toBe(all.length);
    for (const r of all) {
      expect(['warning', 'critical'], r.alert).toContain(r.labels?.severity);
      expect(r.annotations?.summary?.trim(), `${r.alert} summary`).toBeTruthy();
      expect(r.annotations?.description?.trim(), `${r.alert} description`).toBeTruthy();
    }
  });

  it(`each has a runbook entry in ${DOC_FILES.operations}, whose thresholds are the declared ones`, () => {
    const page = read(DOC_FILES.operations);
    expect(section(page, 'alert-thresholds')).toBe(thresholdsTable());
    const book = section(page, 'alert-runbook');
    expect(book).toBe(runbook());
    for (const r of rules())
      expect(book, r.alert).toMatch(
        new RegExp(
          `^#### ${r.alert}\\n\\n\\*(warning|critical)\\* — .+\\n\\n- \\*\\*Check:\\*\\* .+\\n- \\*\\*Act:\\*\\* .+`,
          'm',
        ),
      );
  });

  it('every threshold is used by a rule', () => {
    const source = read('scripts/alerts.ts');
    for (const name of Object.keys(THRESHOLDS))
      expect(source, name).toMatch(new RegExp(`(T\\('${name}'\\)|for: '${name}')`));
  });

  it('recording rules: declared in scripts/alerts.ts, each name once, quoted in docs/node-agent.md', () => {
    expect(records().map((r) => r.record)).toEqual(RECORDING_RULES.map((r) => r.record));
    expect(new Set(records().map((r) => r.record)).size).toBe(records().length);
    for (const r of records()) expect(r.record, 'level:metric:operations').toMatch(/^[a-z_]+:[a-z_]+:[a-z_0-9]+$/);
    expect(section(read(DOC_FILES.nodeAgent), 'job-usage-rules')).toBe(recordingRulesDoc());
  });

  it('a recorded series is read only by rules after the one that records it (evaluation order)', () => {
    const order = allRules().map((r) => ('record' in r ? r.record : r.alert));
    for (const [i, r] of allRules().entries())
      for (const n of metricNames(r.expr).filter((m) => m.includes(':')))
        expect(order.indexOf(n), `${order[i]} reads ${n} before it is recorded`).toBeLessThan(i);
  });

  it('read only metrics that a catalogue declares (or a listed external one, or a recorded one)', () => {
    const known = knownNames();
    const used = allRules().flatMap((r) =>
      metricNames(r.expr).map((n) => ['record' in r ? r.record : r.alert, n] as const),
    );
    expect(used.length).toBeGreaterThan(rules().length);
    expect(used.filter(([, n]) => !known.has(n) && !PLANNED.includes(n))).toEqual([]);
  });

  it('a planned family is read by a rule and not yet declared (once declared, drop it from PLANNED)', () => {
    const used = new Set(rules().flatMap((r) => metricNames(r.expr)));
    for (const name of PLANNED) {
      expect(used.has(name), name).toBe(true);
      expect(knownNames().has(name), `${name} is declared now: remove it from PLANNED`).toBe(false);
    }
  });

  it('the metric-name reader ignores labels, functions, grouping and strings', () => {
    expect(
      metricNames(
        'sum by (job, instance) (rate(a_total{x="y{z}"}[5m])) / on (job) group_left (reason) label_replace(b > 0, "reason", "c d", "", "") or up == 0',
      ),
    ).toEqual(['a_total', 'b', 'up']);
    expect(metricNames('rate({__name__=~"otelcol_x"}[10m]) > 0')).toEqual([]);
    expect(metricNames('a:b:rate10m > 0 unless c offset 10m')).toEqual(['a:b:rate10m', 'c']);
  });

  it('each is unit-tested in alerts.test.yml: once firing and once quiet', () => {
    const tests = (
      parse(read(TESTS_FILE)) as { tests: { alert_rule_test: { alertname: string; exp_alerts: unknown[] }[] }[] }
    ).tests.flatMap((t) => t.alert_rule_test);
    for (const r of rules()) {
      const mine = tests.filter((t) => t.alertname === r.alert);
      expect(
        mine.some((t) => t.exp_alerts.length > 0),
        `${r.alert} fires in a test`,
      ).toBe(true);
      expect(
        mine.some((t) => t.exp_alerts.length === 0),
        `${r.alert} stays quiet in a test`,
      ).toBe(true);
    }
    expect(ALERT_GROUPS.flatMap((g) => g.rules).length).toBe(rules().length);
  });
});

const promtool = findTool('promtool', 'prometheus');

describe.runIf(shouldRun(promtool))('promtool', () => {
  it('check rules: clean', async () => {
    const r = await run(toolPath(promtool), ['check', 'rules', `${ROOT}${ALERT_RULES_FILE}`]);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(r.stdout).toMatch(new RegExp(`SUCCESS: ${allRules().length} rules found`));
  });

  it('test rules: every case passes', async () => {
    const r = await run(toolPath(promtool), ['test', 'rules', `${ROOT}${TESTS_FILE}`]);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(r.stdout).toContain('SUCCESS');
  });
});
