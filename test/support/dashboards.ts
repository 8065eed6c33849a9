/**
 * Reading the Grafana dashboards in otel-config/grafana/dashboards the way Grafana 11 does: panels
 * nested in collapsed rows included, template variables and $__ macros substituted, so their
 * PromQL can be run against a real Prometheus.
 */
import fs from 'node:fs';
import path from 'node:path';

type Obj = Record<string, unknown>;

export interface Dashboard {
  readonly file: string;
  readonly json: Obj;
}

export interface PanelQuery {
  readonly panel: string;
  readonly refId: string;
  readonly expr: string;
}

/** What the test gives a template variable: `ALL` (Grafana's All option) or a concrete value. */
export const ALL = Symbol('All');
export type Choice = typeof ALL | string;

/**
 * The values the tests give template variables on the demo's data. mlx5_1 is the demo's shared
 * port, where the errors climb; 918001 holds mlx5_0 alone, so it has job series. Filters are
 * left at All.
 */
export const DEMO_CHOICES: Readonly<Record<string, Choice>> = {
  cluster: ALL,
  instance: ALL,
  device: 'mlx5_1',
  job_id: '918001',
};

/**
 * Grafana's macros as the tests set them. The rate window spans 20 scrapes at 1 s and two 10 s
 * ticks of the fake slurmctld's RPC counters, so per-RPC averages are not 0/0; $__range needs only
 * 2 samples.
 */
export const MACROS: Readonly<Record<string, string>> = {
  __rate_interval: '20s',
  __interval: '5s',
  __range: '1m',
  __range_s: '60',
  __range_ms: '60000',
  __interval_ms: '5000',
};

/** Every query of a dashboard with the demo's choices and the macros substituted. */
export function demoQueries(d: Dashboard): (PanelQuery & { readonly promql: string })[] {
  const values = { ...MACROS, ...variableValues(d.json, DEMO_CHOICES) };
  return panelQueries(d.json).map((q) => ({ ...q, promql: substitute(q.expr, values) }));
}

/** The datasource uids a dashboard may use: the provisioned one, or its datasource variable. */
const DATASOURCE_UIDS = ['prometheus', '${datasource}'];
const GRID_COLUMNS = 24;

function isObj(v: unknown): v is Obj {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
const list = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);
const text = (v: unknown): string => (typeof v === 'string' ? v : '');

export function loadDashboards(dir: string): Dashboard[] {
  return fs
    .readdirSync(dir)
    .filter((f) => f.endsWith('.json'))
    .sort()
    .map((file) => ({ file, json: JSON.parse(fs.readFileSync(path.join(dir, file), 'utf8')) as Obj }));
}

/** Every panel, rows and the panels a collapsed row holds included, in document order. */
export function allPanels(d: Obj): Obj[] {
  const walk = (panels: unknown[]): Obj[] => panels.filter(isObj).flatMap((p) => [p, ...walk(list(p.panels))]);
  return walk(list(d.panels));
}

/** The PromQL of every target; throws on a panel without targets or a target without expression. */
export function panelQueries(d: Obj): PanelQuery[] {
  return allPanels(d)
    .filter((p) => p.type !== 'row')
    .flatMap((p) => {
      const title = text(p.title) || `panel ${String(p.id)}`;
      const targets = list(p.targets).filter(isObj);
      if (targets.length === 0) throw new Error(`panel "${title}" has no target`);
      return targets.map((t) => {
        const expr = text(t.expr).trim();
        if (expr === '') throw new Error(`panel "${title}" target ${text(t.refId) || '?'} has an empty expression`);
        return { panel: title, refId: text(t.refId), expr };
      });
    });
}

export function templateVariables(d: Obj): Obj[] {
  return list(isObj(d.templating) ? d.templating.list : undefined).filter(isObj);
}

/** The label_values() query of a query variable, as PromQL giving one row per label value. */
export function variableQuery(v: Obj): { label: string; expr: string } {
  const q = text(v.definition) || (isObj(v.query) ? text(v.query.query) : text(v.query));
  const m = /^label_values\(\s*(.+),\s*(\w+)\s*\)$/s.exec(q.trim());
  if (!m)
    throw new Error(
      `variable ${text(v.name)}: unsupported query ${JSON.stringify(q)} (only label_values(selector, label))`,
    );
  return { label: m[2] as string, expr: `count by (${m[2]}) (${m[1]})` };
}

/**
 * Values for every query variable of the dashboard, from the test's choices. A variable the test
 * has no choice for, or an All choice for a variable without Grafana's `.*` All value, throws.
 */
export function variableValues(d: Obj, choices: Readonly<Record<string, Choice>>): Record<string, string> {
  const values: Record<string, string> = {};
  for (const v of templateVariables(d)) {
    const name = text(v.name);
    if (v.type === 'datasource') continue; // selects the datasource; never part of PromQL
    const choice = choices[name];
    if (choice === undefined) throw new Error(`template variable $${name}: the test has no value for it`);
    if (choice === ALL && !(v.includeAll === true && v.allValue === '.*'))
      throw new Error(`template variable $${name}: chosen as All but its All value is not ".*"`);
    values[name] = choice === ALL ? '.*' : choice;
  }
  return values;
}

/**
 * Grafana's substitution: `$name`, `${name}`, `${name:format}` and `[[name]]`, from `values`
 * (variables and macros alike). Anything unknown, or any `$` left over, throws.
 */
export function substitute(expr: string, values: Readonly<Record<string, string>>): string {
  const out = expr.replace(
    /\$\{(\w+)(?::\w+)?\}|\$(\w+)|\[\[(\w+)(?::\w+)?\]\]/g,
    (ref, a?: string, b?: string, c?: string) => {
      const name = (a ?? b ?? c) as string;
      const value = values[name];
      if (value === undefined) throw new Error(`unknown template variable ${ref} in ${expr}`);
      return value;
    },
  );
  if (out.includes('$') || out.includes('[[')) throw new Error(`unsubstituted reference left in ${out}`);
  return out;
}

/** Everything about a dashboard's JSON that provisioning into Grafana 11 relies on; [] when fine. */
export function structureProblems(d: Obj): string[] {
  const problems: string[] = [];
  const bad = (cond: boolean, msg: string) => void (cond && problems.push(msg));
  bad(!/^[\w-]{1,40}$/.test(text(d.uid)), `uid ${JSON.stringify(d.uid)} is not 1-40 letters, digits, - or _`);
  bad(text(d.title).trim() === '', 'no title');
  bad(
    typeof d.schemaVersion !== 'number' || d.schemaVersion < 36 || d.schemaVersion > 41,
    `schemaVersion ${String(d.schemaVersion)} is not one Grafana 11 reads as current`,
  );
  bad(d.id !== null && d.id !== undefined, 'a provisioned dashboard must not carry a database id');
  bad(list(d.panels).length === 0, 'no panels');
  const ids = new Set<unknown>();
  for (const p of allPanels(d)) {
    const name = `panel "${text(p.title)}"`;
    bad(typeof p.id !== 'number' || ids.has(p.id), `${name}: id ${String(p.id)} missing or repeated`);
    ids.add(p.id);
    bad(text(p.type) === '', `${name}: no type`);
    problems.push(...gridProblems(name, p.gridPos));
    if (p.type === 'row')
      bad(p.collapsed !== true && list(p.panels).length > 0, `${name}: an expanded row must not hold panels`);
    else problems.push(...datasourceProblems(name, p));
  }
  for (const v of templateVariables(d))
    if (v.type === 'query') problems.push(...datasourceProblems(`variable $${text(v.name)}`, v));
  return problems;
}

function gridProblems(name: string, g: unknown): string[] {
  if (!isObj(g)) return [`${name}: no gridPos`];
  const [h, w, x, y] = [g.h, g.w, g.x, g.y].map((n) => (Number.isInteger(n) ? (n as number) : NaN)) as [
    number,
    number,
    number,
    number,
  ];
  const ok = h >= 1 && w >= 1 && x >= 0 && y >= 0 && x + w <= GRID_COLUMNS;
  return ok ? [] : [`${name}: gridPos ${JSON.stringify(g)} is not within the ${GRID_COLUMNS}-column grid`];
}

function datasourceProblems(name: string, p: Obj): string[] {
  const sources = [
    p.datasource,
    ...list(p.targets)
      .filter(isObj)
      .map((t) => t.datasource ?? p.datasource),
  ];
  return sources.flatMap((ds) =>
    isObj(ds) && ds.type === 'prometheus' && DATASOURCE_UIDS.includes(text(ds.uid))
      ? []
      : [`${name}: datasource ${JSON.stringify(ds)} is not the Prometheus one (uid ${DATASOURCE_UIDS.join(' or ')})`],
  );
}
