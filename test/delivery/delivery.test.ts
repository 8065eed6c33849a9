/**
 * Delivery files (deploy/, otel-config/, Dockerfile, docker-compose.yml): they parse, they grant
 * exactly the privileges deploy/README.md describes, the collector configs only name components
 * of the pinned collector version, and the command lines they contain are accepted by the CLI.
 * Nothing here needs Docker or Kubernetes; docker-compose (Debian package `docker-compose`) and
 * promtool (Debian package `prometheus`) validate their files when present, and must be present
 * under CI.
 */
import fs from 'node:fs';
import path from 'node:path';
import { spawn, spawnSync } from 'node:child_process';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { demoTree } from '../../src/demo/scenarios.js';
import { writeTree } from '../../src/demo/nodetree.js';
import { tmpDir } from '../support/tmp.js';
import { canMakeDeviceNodes, withDeviceNodes } from '../support/node-tree.js';
import { findTool, run, shouldRun, toolPath } from '../support/tools.js';
import { collectorVersion, COLLECTOR_COMPONENTS } from '../support/collector.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const at = (rel: string): string => path.join(ROOT, rel);
const read = (rel: string): string => fs.readFileSync(at(rel), 'utf8');

// ---------------------------------------------------------------------------------------------
// The collector version every config is written for: the release scripts/collector/manifest.yaml
// pins (the Collector the integration tests build and run). docker-compose.yml and
// deploy/kubernetes/otel-gateway.yaml must pin the contrib image of exactly this release, and the
// configs may only name the components that build holds (COLLECTOR_COMPONENTS), by their current
// type names (the integration test checks the list against `otelcol components`).
const CONTRIB_VERSION = collectorVersion();
const CONTRIB_IMAGE = `otel/opentelemetry-collector-contrib:${CONTRIB_VERSION}`;

// ---------------------------------------------------------------------------------------------
// Small typed accessors over parsed YAML (plain JS values).
type Obj = Record<string, unknown>;

function isObj(v: unknown): v is Obj {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
function obj(v: unknown, where: string): Obj {
  if (!isObj(v)) throw new Error(`${where}: expected a mapping, got ${JSON.stringify(v)}`);
  return v;
}
function arr(v: unknown, where: string): unknown[] {
  if (!Array.isArray(v)) throw new Error(`${where}: expected a list, got ${JSON.stringify(v)}`);
  return v;
}
function str(v: unknown, where: string): string {
  if (typeof v !== 'string') throw new Error(`${where}: expected a string, got ${JSON.stringify(v)}`);
  return v;
}
function strs(v: unknown, where: string): string[] {
  return arr(v, where).map((x, i) => str(x, `${where}[${i}]`));
}
/** Follows a dotted path through mappings (numeric segments index lists). */
function get(v: unknown, dotted: string): unknown {
  let cur: unknown = v;
  for (const key of dotted.split('.')) {
    if (Array.isArray(cur) && /^\d+$/.test(key)) cur = cur[Number(key)];
    else if (isObj(cur)) cur = cur[key];
    else return undefined;
  }
  return cur;
}

// ---------------------------------------------------------------------------------------------
// YAML files: every .yaml/.yml under deploy/ and otel-config/, plus docker-compose.yml.
function walk(dir: string): string[] {
  const out: string[] = [];
  for (const e of fs.readdirSync(at(dir), { withFileTypes: true })) {
    const rel = path.posix.join(dir, e.name);
    if (e.isDirectory()) out.push(...walk(rel));
    else if (/\.ya?ml$/.test(e.name)) out.push(rel);
  }
  return out.sort();
}
const YAML_FILES = [...walk('deploy'), ...walk('otel-config'), 'docker-compose.yml'];

/** All documents of a file; fails on any YAML error or warning (duplicate keys included). */
function docs(rel: string): unknown[] {
  const parsed = parseAllDocuments(read(rel), { prettyErrors: true, uniqueKeys: true });
  if (!Array.isArray(parsed)) return [];
  const problems = parsed.flatMap((d) => [...d.errors, ...d.warnings].map((e) => `${rel}: ${e.message}`));
  if (problems.length > 0) throw new Error(problems.join('\n'));
  return parsed.map((d) => d.toJS() as unknown).filter((d) => d !== null && d !== undefined);
}
function doc(rel: string): Obj {
  const all = docs(rel);
  expect(all, `${rel}: one document`).toHaveLength(1);
  return obj(all[0], rel);
}

/** Kubernetes objects of every manifest under deploy/kubernetes, with the file they came from. */
interface K8sObject {
  readonly file: string;
  readonly kind: string;
  readonly name: string;
  readonly namespace: string | undefined;
  readonly body: Obj;
}
function k8sObjects(): K8sObject[] {
  return walk('deploy/kubernetes')
    .filter((f) => !f.endsWith('kustomization.yaml'))
    .flatMap((file) =>
      docs(file).map((d, i) => {
        const body = obj(d, `${file}#${i}`);
        const meta = obj(body.metadata, `${file}#${i}.metadata`);
        const ns = meta.namespace;
        return {
          file,
          kind: str(body.kind, `${file}#${i}.kind`),
          name: str(meta.name, `${file}#${i}.metadata.name`),
          namespace: typeof ns === 'string' ? ns : undefined,
          body,
        };
      }),
    );
}
function k8s(kind: string, name: string): K8sObject {
  const found = k8sObjects().filter((o) => o.kind === kind && o.name === name);
  expect(
    found.map((o) => `${o.kind}/${o.name}`),
    `${kind}/${name} defined once under deploy/kubernetes`,
  ).toEqual([`${kind}/${name}`]);
  return found[0] as K8sObject;
}
interface Container {
  readonly name: string;
  readonly args: string[];
  readonly env: Obj[];
  readonly body: Obj;
}
function onlyContainer(o: K8sObject): Container {
  const list = arr(get(o.body, 'spec.template.spec.containers'), `${o.file} containers`);
  expect(list, `${o.kind}/${o.name}: one container`).toHaveLength(1);
  const c = obj(list[0], `${o.file} container`);
  return {
    name: str(c.name, 'container name'),
    args: c.args === undefined ? [] : strs(c.args, `${o.file} args`),
    env: c.env === undefined ? [] : arr(c.env, `${o.file} env`).map((e, i) => obj(e, `${o.file} env[${i}]`)),
    body: c,
  };
}

// ---------------------------------------------------------------------------------------------
// systemd units: [Section] key=value, a key may repeat (values kept in order).
type Unit = Record<string, Record<string, string[]>>;
function parseUnit(rel: string): Unit {
  const unit: Unit = {};
  let section: Record<string, string[]> | undefined;
  for (const raw of read(rel).split('\n')) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#') || line.startsWith(';')) continue;
    const sec = /^\[(.+)\]$/.exec(line);
    if (sec) {
      section = unit[sec[1] as string] ??= {};
      continue;
    }
    const eq = line.indexOf('=');
    if (eq <= 0 || !section) throw new Error(`${rel}: cannot parse "${line}"`);
    (section[line.slice(0, eq)] ??= []).push(line.slice(eq + 1));
  }
  return unit;
}
function unitValues(u: Unit, section: string, key: string): string[] {
  return u[section]?.[key] ?? [];
}
/** Space-separated list settings: an empty assignment resets, as systemd does. */
function unitList(u: Unit, section: string, key: string): string[] {
  let out: string[] = [];
  for (const v of unitValues(u, section, key)) out = v.trim() === '' ? [] : [...out, ...v.trim().split(/\s+/)];
  return out;
}
function unitLast(u: Unit, section: string, key: string): string | undefined {
  return unitValues(u, section, key).at(-1);
}

// ---------------------------------------------------------------------------------------------
// The built CLI (npm test builds first), to check that delivery files use real flags and variables.
const BIN = at('dist/src/cli/main.js');
function cli(args: string[]): { code: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [BIN, ...args], {
    encoding: 'utf8',
    env: { PATH: process.env.PATH ?? '' },
    timeout: 20_000,
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}
/** `slurm-otel <command> --help`, whitespace collapsed (commander wraps long lines). */
function help(command: string): string {
  return rawHelp(command).replace(/\s+/g, ' ');
}
function rawHelp(command: string): string {
  const r = cli([command, '--help']);
  expect(r.code, `slurm-otel ${command} --help: ${r.stderr}`).toBe(0);
  return r.stdout;
}
/** The options a command declares (the `--flag` that starts each option line of its help). */
function optionsOf(command: string): string[] {
  return [...rawHelp(command).matchAll(/^\s+(?:-\w, )?(--[\w-]+)/gm)].map((m) => m[1] as string);
}
/** `--flag` names in an argument list (`--flag value` and `--flag=value`). */
function flagsOf(args: readonly string[]): string[] {
  return args.filter((a) => a.startsWith('--')).map((a) => a.split('=')[0] as string);
}
function expectFlagsKnown(args: readonly string[], options: readonly string[], where: string): void {
  for (const flag of flagsOf(args)) expect(options, `${where}: ${flag} is not an option of the CLI`).toContain(flag);
}

/** Runs a command asynchronously (the test's own HTTP server must keep answering meanwhile). */
function runWithEnv(
  cmd: string,
  args: string[],
  env: Record<string, string>,
): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, {
      env: { PATH: process.env.PATH ?? '', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr.on('data', (d: Buffer) => (output += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, output }));
  });
}

const dockerCompose = findTool('docker-compose', 'docker-compose');
const promtool = findTool('promtool', 'prometheus');

// =============================================================================================

describe('YAML files of deploy/, otel-config/ and docker-compose.yml', () => {
  it('are all there', () => {
    for (const f of [
      'otel-config/collector-agent.yaml',
      'otel-config/collector-gateway.yaml',
      'otel-config/prometheus.yml',
      'otel-config/prometheus/alerts.yml',
      'otel-config/prometheus/alerts.test.yml',
      'otel-config/grafana/provisioning/datasources/prometheus.yaml',
      'otel-config/grafana/provisioning/dashboards/slurm-otel.yaml',
      'deploy/kubernetes/namespace.yaml',
      'deploy/kubernetes/node-agent.yaml',
      'deploy/kubernetes/cluster-agent.yaml',
      'deploy/kubernetes/cluster-agent-rbac.yaml',
      'deploy/kubernetes/cluster-agent-topology-rbac.yaml',
      'docker-compose.yml',
    ])
      expect(YAML_FILES).toContain(f);
  });

  it.each(YAML_FILES)('%s parses (every document, no duplicate keys)', (file) => {
    expect(docs(file).length).toBeGreaterThan(0);
  });
});

// ---------------------------------------------------------------------------------------------

describe('OpenTelemetry Collector configs', () => {
  const kinds = ['receivers', 'processors', 'exporters', 'extensions'] as const;
  const typeOf = (id: string): string => id.split('/')[0] as string;

  describe.each(['otel-config/collector-agent.yaml', 'otel-config/collector-gateway.yaml'])('%s', (file) => {
    it(`names only components of the Collector build (${CONTRIB_VERSION}), by their current type names`, () => {
      const cfg = doc(file);
      for (const kind of kinds) {
        const section = cfg[kind] === undefined ? {} : obj(cfg[kind], `${file} ${kind}`);
        for (const id of Object.keys(section))
          expect(COLLECTOR_COMPONENTS[kind], `${file}: ${kind} "${id}"`).toContain(typeOf(id));
      }
      expect(JSON.stringify(cfg)).not.toMatch(/"logging(\/[^"]*)?"/);
    });

    it('pipelines reference only defined components; memory_limiter first, no batch processor', () => {
      const cfg = doc(file);
      const service = obj(cfg.service, `${file} service`);
      const pipelines = obj(service.pipelines, `${file} service.pipelines`);
      expect(Object.keys(pipelines).length).toBeGreaterThan(0);
      for (const [name, p] of Object.entries(pipelines)) {
        const pipe = obj(p, `${file} pipeline ${name}`);
        for (const kind of ['receivers', 'processors', 'exporters'] as const) {
          const defined = Object.keys(obj(cfg[kind], `${file} ${kind}`));
          const used = strs(pipe[kind], `${file} ${name}.${kind}`);
          expect(used.length, `${file} ${name}.${kind} is empty`).toBeGreaterThan(0);
          for (const id of used)
            expect(defined, `${file}: pipeline ${name} uses undefined ${kind} "${id}"`).toContain(id);
        }
        const processors = strs(pipe.processors, `${file} ${name}.processors`);
        expect(typeOf(processors[0] as string), `${file} ${name}: memory_limiter first`).toBe('memory_limiter');
        // Deprecated since v0.160: batching belongs in the exporters' sending_queue.
        expect(processors.map(typeOf), `${file} ${name}: no batch processor`).not.toContain('batch');
      }
      const extensions = service.extensions === undefined ? [] : strs(service.extensions, `${file} service.extensions`);
      for (const id of extensions) expect(Object.keys(obj(cfg.extensions, `${file} extensions`))).toContain(id);
      expect(extensions.map(typeOf)).toContain('health_check');
    });

    it('receives OTLP on 4318 (HTTP) and 4317 (gRPC)', () => {
      const otlp = obj(get(doc(file), 'receivers.otlp.protocols'), `${file} otlp protocols`);
      expect(str(get(otlp, 'http.endpoint'), 'http endpoint')).toMatch(/:4318$/);
      expect(str(get(otlp, 'grpc.endpoint'), 'grpc endpoint')).toMatch(/:4317$/);
    });
  });

  it('the gateway adds the cluster name, remote-writes and serves a Prometheus endpoint', () => {
    const cfg = doc('otel-config/collector-gateway.yaml');
    const exporters = strs(get(cfg, 'service.pipelines.metrics.exporters'), 'gateway exporters');
    expect(exporters).toEqual(expect.arrayContaining(['prometheus_remote_write', 'prometheus']));
    expect(strs(get(cfg, 'service.pipelines.metrics.processors'), 'gateway processors')).toContain('resource');
    const actions = arr(get(cfg, 'processors.resource.attributes'), 'resource attributes').map((a) =>
      obj(a, 'resource action'),
    );
    const cluster = actions.find((a) => a.key === 'slurm.cluster');
    expect(cluster?.action, 'slurm.cluster is inserted (an agent-provided value wins)').toBe('insert');
    expect(str(cluster?.value, 'slurm.cluster value')).toMatch(/^\$\{env:SLURM_CLUSTER_NAME(:-[^}]+)?\}$/);
    expect(actions.find((a) => a.key === 'service.instance.id')?.from_attribute).toBe('host.name');
    expect(str(get(cfg, 'exporters.prometheus.endpoint'), 'prometheus endpoint')).toMatch(/^0\.0\.0\.0:8889$/);
    expect(str(get(cfg, 'exporters.prometheus_remote_write.http.endpoint'), 'remote write endpoint')).toMatch(
      /\/api\/v1\/write/,
    );
    expect(get(cfg, 'exporters.prometheus_remote_write.external_labels.slurm_cluster')).toBe(cluster?.value);
    expect(get(cfg, 'exporters.prometheus.const_labels.slurm_cluster')).toBe(cluster?.value);
    expect(str(get(cfg, 'extensions.health_check.endpoint'), 'health_check endpoint')).toBe('0.0.0.0:13133');
  });

  it('the node-local agent derives the instance, queues and batches, and forwards OTLP/gRPC to the gateway', () => {
    const cfg = doc('otel-config/collector-agent.yaml');
    const processors = strs(get(cfg, 'service.pipelines.metrics.processors'), 'agent processors');
    expect(processors).toContain('resource');
    expect(strs(get(cfg, 'service.pipelines.metrics.exporters'), 'agent exporters').map(typeOf)).toEqual(['otlp_grpc']);
    expect(get(cfg, 'exporters.otlp_grpc.sending_queue.enabled'), 'buffers through gateway outages').toBe(true);
  });

  it("every gRPC hop to the gateway sends requests the gateway's receiver takes: a byte cap under its limit", () => {
    // A gRPC server refuses a message over its limit (4 MiB unless set) as not retryable, and the
    // sending Collector drops it: an uncapped batch lost what a large cluster pushed.
    const limitMiB = get(
      doc('otel-config/collector-gateway.yaml'),
      'receivers.otlp.protocols.grpc.max_recv_msg_size_mib',
    );
    expect(limitMiB, 'the gateway sets its gRPC message limit on purpose').toEqual(expect.any(Number));
    for (const file of ['otel-config/collector-agent.yaml', 'otel-config/collector-gateway.yaml']) {
      const exporters = obj(doc(file).exporters, `${file} exporters`);
      for (const [id, e] of Object.entries(exporters)) {
        if (typeOf(id) !== 'otlp_grpc') continue;
        const batch = obj(get(e, 'sending_queue.batch'), `${file} ${id}.sending_queue.batch`);
        expect(batch.sizer, `${file} ${id}: batches measured in bytes`).toBe('bytes');
        expect(batch.max_size, `${file} ${id}: a maximum batch size`).toEqual(expect.any(Number));
        expect(batch.max_size as number, `${file} ${id}: under the gateway's limit`).toBeLessThan(
          (limitMiB as number) * 1024 * 1024,
        );
      }
    }
  });

  it(`docker-compose.yml and the Kubernetes gateway pin ${CONTRIB_IMAGE}`, () => {
    expect(get(doc('docker-compose.yml'), 'services.otel-collector.image')).toBe(CONTRIB_IMAGE);
    expect(get(onlyContainer(k8s('Deployment', 'otel-gateway')).body, 'image')).toBe(CONTRIB_IMAGE);
    for (const f of YAML_FILES) {
      for (const m of read(f).matchAll(/opentelemetry-collector-contrib:([\w.-]+)/g))
        expect(m[1], `${f} pins another collector version`).toBe(CONTRIB_VERSION);
    }
  });
});

// ---------------------------------------------------------------------------------------------

describe('otel-config/prometheus.yml', () => {
  const cfg = (): Obj => doc('otel-config/prometheus.yml');
  const job = (name: string): Obj => {
    const jobs = arr(cfg().scrape_configs, 'scrape_configs').map((j) => obj(j, 'scrape config'));
    const found = jobs.find((j) => j.job_name === name);
    if (!found) throw new Error(`no scrape job ${name}`);
    return found;
  };

  it.each([
    ['slurm-otel-node', 9836],
    ['slurm-otel-node-self', 9837],
    ['slurm-otel-cluster', 8080],
    ['slurm-otel-cluster-self', 8081],
    ['otel-gateway', 8889],
    ['otel-collector', 8888],
  ])('job %s scrapes port %i', (name, port) => {
    expect(JSON.stringify(job(name).relabel_configs)).toContain(`:${port}`);
  });

  it('keeps the gateway labels (honor_labels) when scraping its prometheus exporter', () => {
    expect(job('otel-gateway').honor_labels).toBe(true);
  });

  it('the compose stack pushes (path B): no target files for the directly pulled metrics or the gateway', () => {
    // Scraping them as well as receiving the remote write would store every series twice.
    for (const f of ['slurm-otel-node.yml', 'slurm-otel-cluster.yml', 'otel-gateway.yml'])
      expect(fs.existsSync(at(`otel-config/targets/${f}`)), f).toBe(false);
    expect(fs.existsSync(at('otel-config/targets/slurm-otel-node-self.yml'))).toBe(true);
  });

  it('loads the alert rules, by a path relative to itself', () => {
    expect(strs(cfg().rule_files, 'rule_files')).toEqual(['prometheus/alerts.yml']);
    expect(fs.existsSync(at('otel-config/prometheus/alerts.yml'))).toBe(true);
  });

  it.runIf(shouldRun(promtool))('passes promtool check config', async () => {
    const r = await run(toolPath(promtool), ['check', 'config', at('otel-config/prometheus.yml')]);
    expect(r.code, r.stdout + r.stderr).toBe(0);
  });
});

// ---------------------------------------------------------------------------------------------

describe('docker-compose.yml', () => {
  const compose = (): Obj => doc('docker-compose.yml');
  const services = (): Obj => obj(compose().services, 'services');
  const service = (name: string): Obj => obj(services()[name], `service ${name}`);

  it('has the four services and no keys docker-compose 1.29 rejects', () => {
    expect(Object.keys(services()).sort()).toEqual(['grafana', 'otel-collector', 'prometheus', 'slurm-otel']);
    expect(compose()).not.toHaveProperty('name');
    for (const [name, s] of Object.entries(services()))
      expect(obj(obj(s, name).healthcheck, `${name} healthcheck`)).not.toHaveProperty('start_interval');
  });

  it('every service has a health check, and depends_on conditions wait only for checked services', () => {
    for (const [name, s] of Object.entries(services())) {
      const hc = obj(obj(s, name).healthcheck, `${name} healthcheck`);
      expect(strs(hc.test, `${name} healthcheck.test`)[0]).toMatch(/^CMD(-SHELL)?$/);
      const deps = obj(s, name).depends_on;
      if (isObj(deps))
        for (const dep of Object.keys(deps)) expect(service(dep).healthcheck, `${name} waits for ${dep}`).toBeDefined();
    }
  });

  it('pins every image (no :latest, Prometheus >= 2.50, Grafana and collector versions explicit)', () => {
    for (const [name, s] of Object.entries(services())) {
      const image = obj(s, name).image;
      if (obj(s, name).build !== undefined) continue; // built here from the Dockerfile
      expect(str(image, `${name} image`)).toMatch(/^[\w./-]+:v?\d+\.\d+\.\d+$/);
    }
    const prom = /^prom\/prometheus:v(\d+)\.(\d+)\.\d+$/.exec(str(service('prometheus').image, 'prometheus image'));
    expect(prom).not.toBeNull();
    expect(Number(prom?.[1]) * 1000 + Number(prom?.[2])).toBeGreaterThanOrEqual(2050);
    expect(str(service('grafana').image, 'grafana image')).toMatch(/^grafana\/grafana:\d+\.\d+\.\d+$/);
  });

  it('runs the demo from the Dockerfile, bound to 0.0.0.0, pushing to the collector; the flags exist', () => {
    const s = service('slurm-otel');
    expect(get(s, 'build.context')).toBe('.');
    const command = strs(s.command, 'slurm-otel command');
    expect(command[0]).toBe('demo');
    expect(command.join(' ')).toContain('--otlp-endpoint http://otel-collector:4318');
    expect(command.join(' ')).toContain('--metrics-bind-address 0.0.0.0:9836');
    expect(command.join(' ')).toContain('--monitoring-bind-address 0.0.0.0:9837');
    expectFlagsKnown(command, optionsOf('demo'), 'docker-compose.yml slurm-otel command');
  });

  it('Prometheus accepts remote write; Grafana is anonymous-viewer with the provisioning mounted', () => {
    expect(strs(service('prometheus').command, 'prometheus command')).toContain('--web.enable-remote-write-receiver');
    const g = service('grafana');
    expect(get(g, 'environment.GF_AUTH_ANONYMOUS_ENABLED')).toBe('true');
    expect(get(g, 'environment.GF_AUTH_ANONYMOUS_ORG_ROLE')).toBe('Viewer');
    const volumes = strs(g.volumes, 'grafana volumes');
    expect(volumes).toContain('./otel-config/grafana/provisioning:/etc/grafana/provisioning:ro');
    expect(volumes).toContain('./otel-config/grafana/dashboards:/var/lib/grafana/dashboards:ro');
  });

  it('Prometheus gets the alert rules where prometheus.yml looks for them', () => {
    const volumes = strs(service('prometheus').volumes, 'prometheus volumes');
    const config = volumes.find((v) => v.startsWith('./otel-config/prometheus.yml:'))?.split(':')[1] as string;
    const rules = strs(doc('otel-config/prometheus.yml').rule_files, 'rule_files').map((r) =>
      path.posix.join(path.posix.dirname(config), r),
    );
    for (const r of rules) expect(volumes, r).toContain(`./otel-config/prometheus/alerts.yml:${r}:ro`);
  });

  it('every bind-mounted file or directory exists', () => {
    for (const [name, s] of Object.entries(services())) {
      const volumes = obj(s, name).volumes;
      if (volumes === undefined) continue;
      for (const v of strs(volumes, `${name} volumes`)) {
        const source = v.split(':')[0] as string;
        if (source.startsWith('./')) expect(fs.existsSync(at(source)), `${name}: ${source}`).toBe(true);
      }
    }
  });

  it.runIf(shouldRun(dockerCompose))('passes docker-compose -f docker-compose.yml config -q', () => {
    const r = spawnSync(toolPath(dockerCompose), ['-f', 'docker-compose.yml', 'config', '-q'], {
      cwd: ROOT,
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect(r.status, `${r.stdout}${r.stderr}${r.error ? String(r.error) : ''}`).toBe(0);
  });
});

// ---------------------------------------------------------------------------------------------

describe('Grafana provisioning', () => {
  it('provisions Prometheus at http://prometheus:9090 with the fixed uid "prometheus"', () => {
    const sources = arr(doc('otel-config/grafana/provisioning/datasources/prometheus.yaml').datasources, 'datasources');
    expect(sources).toHaveLength(1);
    const ds = obj(sources[0], 'datasource');
    expect([ds.type, ds.url, ds.uid, ds.isDefault]).toEqual([
      'prometheus',
      'http://prometheus:9090',
      'prometheus',
      true,
    ]);
  });

  it('loads dashboards from /var/lib/grafana/dashboards, mounted from otel-config/grafana/dashboards', () => {
    const providers = arr(doc('otel-config/grafana/provisioning/dashboards/slurm-otel.yaml').providers, 'providers');
    expect(get(providers[0], 'options.path')).toBe('/var/lib/grafana/dashboards');
    expect(fs.existsSync(at('otel-config/grafana/dashboards/.gitkeep'))).toBe(true);
  });
});

// ---------------------------------------------------------------------------------------------

describe('Dockerfile', () => {
  interface Instr {
    readonly op: string;
    readonly args: string;
  }
  /** Instructions with continuation lines joined and comments dropped. */
  const instructions = (): Instr[] =>
    read('Dockerfile')
      .replace(/\\\n/g, ' ')
      .split('\n')
      .map((l) => l.trim())
      .filter((l) => l !== '' && !l.startsWith('#'))
      .map((l) => {
        const m = /^(\w+)\s+(.*)$/.exec(l);
        if (!m) throw new Error(`Dockerfile: cannot parse "${l}"`);
        return { op: (m[1] as string).toUpperCase(), args: m[2] as string };
      });
  const lastStage = (): Instr[] => {
    const all = instructions();
    const from = all.map((i) => i.op).lastIndexOf('FROM');
    return all.slice(from);
  };

  it('is multi-stage: node:24-bookworm-slim (the main line), npm ci, build, prune of dev dependencies', () => {
    const all = instructions();
    expect(all.filter((i) => i.op === 'FROM').length).toBeGreaterThanOrEqual(2);
    expect(all.find((i) => i.op === 'ARG' && i.args.startsWith('NODE_IMAGE='))?.args).toBe(
      'NODE_IMAGE=node:24-bookworm-slim',
    );
    const runs = all
      .filter((i) => i.op === 'RUN')
      .map((i) => i.args)
      .join('\n');
    expect(runs).toMatch(/npm ci\b/);
    expect(runs).toMatch(/npm run build\b/);
    expect(runs).toMatch(/npm prune --omit=dev\b/);
  });

  it("the runtime stage copies only package.json, production node_modules, dist/src and the node agent's fd reader", () => {
    const copies = lastStage()
      .filter((i) => i.op === 'COPY')
      .map((i) => i.args.split(/\s+/).filter((a) => !a.startsWith('--')));
    expect(copies.map((c) => c[0]).sort()).toEqual([
      '/src/dist/native',
      '/src/dist/src',
      '/src/node_modules',
      '/src/package.json',
    ]);
    expect(
      lastStage()
        .filter((i) => i.op === 'COPY')
        .every((i) => i.args.includes('--from=build')),
    ).toBe(true);
  });

  it("the runtime stage has iproute2's rdma for --qp-counters, installed before USER drops root", () => {
    const stage = lastStage();
    const install = stage.findIndex((i) => i.op === 'RUN' && /apt-get install .*\biproute2\b/.test(i.args));
    expect(install).toBeGreaterThan(0);
    expect(stage[install]?.args).toMatch(/rm -rf \/var\/lib\/apt\/lists/);
    expect(install).toBeLessThan(stage.findIndex((i) => i.op === 'USER'));
  });

  it('runs as a numeric non-root USER with a node-based HEALTHCHECK', () => {
    const users = lastStage().filter((i) => i.op === 'USER');
    expect(users.length).toBeGreaterThan(0);
    const user = (users.at(-1) as Instr).args.split(':')[0] as string;
    expect(user).toMatch(/^\d+$/);
    expect(Number(user)).toBeGreaterThan(0);
    const hc = lastStage().find((i) => i.op === 'HEALTHCHECK');
    expect(hc?.args).toMatch(/CMD \["node", "-e", ".*\/health/);
  });

  it('the HEALTHCHECK command (exec form, valid JSON) passes on 200 and fails on 503 or no answer', async () => {
    const hc = lastStage().find((i) => i.op === 'HEALTHCHECK');
    const json = /\bCMD (\[.*\])$/.exec(hc?.args ?? '')?.[1];
    const argv = JSON.parse(json ?? 'null') as string[];
    expect(argv.slice(0, 2)).toEqual(['node', '-e']);
    let status = 200;
    const server = http.createServer((req, res) => res.writeHead(req.url === '/health' ? status : 404).end());
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/health`;
    const check = async (env: Record<string, string>): Promise<number | null> =>
      (await runWithEnv(process.execPath, argv.slice(1), env)).code;
    try {
      expect(await check({ SLURM_OTEL_HEALTHCHECK_URL: url })).toBe(0);
      status = 503;
      expect(await check({ SLURM_OTEL_HEALTHCHECK_URL: url })).toBe(1);
    } finally {
      await new Promise<void>((r) => server.close(() => r()));
    }
    expect(await check({ SLURM_OTEL_HEALTHCHECK_URL: url })).toBe(1);
  });

  it('ENTRYPOINT is the CLI, CMD the demo bound to 0.0.0.0, and every port is exposed', () => {
    const stage = lastStage();
    expect(JSON.parse(stage.find((i) => i.op === 'ENTRYPOINT')?.args ?? 'null')).toEqual([
      'node',
      'dist/src/cli/main.js',
    ]);
    const cmd = JSON.parse(stage.find((i) => i.op === 'CMD')?.args ?? 'null') as string[];
    expect(cmd[0]).toBe('demo');
    expect(cmd).toEqual(expect.arrayContaining(['0.0.0.0:9836', '0.0.0.0:9837']));
    expectFlagsKnown(cmd, optionsOf('demo'), 'Dockerfile CMD');
    const exposed = stage.filter((i) => i.op === 'EXPOSE').flatMap((i) => i.args.split(/\s+/));
    expect(exposed).toEqual(expect.arrayContaining(['9836', '9837', '8080', '8081']));
  });

  it('.dockerignore keeps local node_modules, dist and .git out of the build context', () => {
    const lines = read('.dockerignore')
      .split('\n')
      .map((l) => l.trim())
      .filter((l) => l !== '' && !l.startsWith('#'));
    expect(lines[0]).toBe('*');
    expect(lines.filter((l) => l.startsWith('!')).sort()).toEqual([
      '!package-lock.json',
      '!package.json',
      '!src/',
      '!tsconfig.json',
    ]);
  });
});

// ---------------------------------------------------------------------------------------------

describe('systemd units', () => {
  it('the node agent runs as a dedicated user with exactly CAP_SYS_PTRACE and CAP_DAC_READ_SEARCH', () => {
    const u = parseUnit('deploy/systemd/slurm-otel-node.service');
    const user = unitLast(u, 'Service', 'User');
    expect(user).toBe('slurm-otel');
    expect(read('deploy/systemd/slurm-otel.sysusers.conf')).toMatch(/^u slurm-otel /m);
    const caps = ['CAP_DAC_READ_SEARCH', 'CAP_SYS_PTRACE'];
    expect(unitList(u, 'Service', 'AmbientCapabilities').sort()).toEqual(caps);
    expect(unitList(u, 'Service', 'CapabilityBoundingSet').sort()).toEqual(caps);
  });

  it('the node agent is hardened: no new privileges, read-only system, /proc and /sys read-only', () => {
    const u = parseUnit('deploy/systemd/slurm-otel-node.service');
    expect(unitLast(u, 'Service', 'NoNewPrivileges')).toBe('yes');
    expect(unitLast(u, 'Service', 'ProtectSystem')).toBe('strict');
    expect(unitLast(u, 'Service', 'ProtectHome')).toMatch(/^(yes|read-only|tmpfs)$/);
    expect(unitLast(u, 'Service', 'PrivateTmp')).toBe('yes');
    expect(unitList(u, 'Service', 'ReadOnlyPaths')).toEqual(expect.arrayContaining(['/proc', '/sys']));
    expect(unitLast(u, 'Service', 'ProtectKernelTunables')).toBe('yes');
    // These would hide the processes, or void the capabilities, that attribution needs.
    expect(unitLast(u, 'Service', 'ProtectProc') ?? 'default').not.toBe('invisible');
    expect(unitLast(u, 'Service', 'ProcSubset')).toBeUndefined();
    expect(unitLast(u, 'Service', 'PrivateUsers')).toBeUndefined();
    expect(unitValues(u, 'Service', 'EnvironmentFile')).toContain('-/etc/default/slurm-otel-node');
    expect(unitLast(u, 'Service', 'ExecStart')).toMatch(/\/slurm-otel node$/);
  });

  it('the node unit and its env example use variables the CLI knows', () => {
    const text = help('node');
    const used = `${read('deploy/systemd/slurm-otel-node.service')}\n${read('deploy/systemd/slurm-otel-node.env.example')}`;
    const vars = [...new Set([...used.matchAll(/\b(IB_SLURM_EXPORTER_[A-Z_]+)=/g)].map((m) => m[1] as string))];
    expect(vars.length).toBeGreaterThan(0);
    for (const v of vars) expect(text, `${v} is not a variable of slurm-otel node`).toContain(`env: ${v}`);
  });

  it('the cluster agent has no capability, a dynamic user, and its settings from an environment file', () => {
    const u = parseUnit('deploy/systemd/slurm-otel-cluster.service');
    expect(unitList(u, 'Service', 'AmbientCapabilities')).toEqual([]);
    expect(unitValues(u, 'Service', 'CapabilityBoundingSet')).toEqual(['']);
    expect(unitLast(u, 'Service', 'DynamicUser')).toBe('yes');
    expect(unitLast(u, 'Service', 'NoNewPrivileges')).toBe('yes');
    expect(unitLast(u, 'Service', 'ProtectSystem')).toBe('strict');
    expect(unitValues(u, 'Service', 'EnvironmentFile')).toContain('-/etc/default/slurm-otel-cluster');
    expect(unitLast(u, 'Service', 'ExecStart')).toMatch(/\/slurm-otel cluster$/);
  });
});

// ---------------------------------------------------------------------------------------------

describe('Kubernetes manifests', () => {
  it('every object is in the slurm-otel namespace, except the RBAC in the Slurm cluster namespace and cluster-scoped RBAC', () => {
    const objects = k8sObjects();
    expect(objects.find((o) => o.kind === 'Namespace')?.name).toBe('slurm-otel');
    for (const o of objects) {
      if (o.kind === 'Namespace') continue;
      if (o.kind === 'ClusterRole' || o.kind === 'ClusterRoleBinding')
        expect(o.namespace, `${o.kind}/${o.name}`).toBeUndefined();
      else if (o.kind === 'Role' || o.kind === 'RoleBinding')
        expect(o.namespace, `${o.kind}/${o.name}`).not.toBe('slurm-otel');
      else expect(o.namespace, `${o.kind}/${o.name}`).toBe('slurm-otel');
    }
  });

  it('kustomization.yaml lists existing files', () => {
    for (const r of strs(doc('deploy/kubernetes/kustomization.yaml').resources, 'resources'))
      expect(fs.existsSync(at(`deploy/kubernetes/${r}`)), r).toBe(true);
  });

  describe('node agent DaemonSet', () => {
    const ds = (): K8sObject => k8s('DaemonSet', 'slurm-otel-node');
    const ROOT_FLAGS: Readonly<Record<string, string>> = {
      '/proc': '--procfs-root',
      '/sys': '--sysfs-root',
      '/sys/fs/cgroup': '--cgroup-root',
    };

    it('uses the host PID namespace', () => {
      expect(get(ds().body, 'spec.template.spec.hostPID')).toBe(true);
    });

    it('mounts /proc, /sys and /sys/fs/cgroup read-only and passes them as the three root flags', () => {
      const volumes = arr(get(ds().body, 'spec.template.spec.volumes'), 'volumes').map((v) => obj(v, 'volume'));
      const c = onlyContainer(ds());
      const mounts = arr(c.body.volumeMounts, 'volumeMounts').map((m) => obj(m, 'volumeMount'));
      const hostPaths = volumes
        .filter((v) => v.hostPath !== undefined)
        .map((v) => str(get(v, 'hostPath.path'), 'hostPath.path'));
      expect(hostPaths.sort()).toEqual(['/proc', '/sys', '/sys/fs/cgroup']);
      for (const [hostPath, flag] of Object.entries(ROOT_FLAGS)) {
        const volume = volumes.find((v) => get(v, 'hostPath.path') === hostPath) as Obj;
        const mount = mounts.find((m) => m.name === volume.name);
        expect(mount?.readOnly, `${hostPath} mounted read-only`).toBe(true);
        expect(c.args, `${flag} points at the mount of ${hostPath}`).toContain(
          `${flag}=${str(mount?.mountPath, 'mountPath')}`,
        );
      }
    });

    it('adds exactly SYS_PTRACE and DAC_READ_SEARCH, drops the rest, read-only root filesystem', () => {
      const sc = obj(onlyContainer(ds()).body.securityContext, 'securityContext');
      expect(strs(get(sc, 'capabilities.add'), 'add').sort()).toEqual(['DAC_READ_SEARCH', 'SYS_PTRACE']);
      expect(strs(get(sc, 'capabilities.drop'), 'drop')).toEqual(['ALL']);
      expect(sc.readOnlyRootFilesystem).toBe(true);
      expect(sc.allowPrivilegeEscalation).toBe(false);
      expect(sc.privileged ?? false).toBe(false);
      expect(get(ds().body, 'spec.template.spec.hostNetwork') ?? false).toBe(false);
      expect(get(ds().body, 'spec.template.spec.automountServiceAccountToken')).toBe(false);
    });

    it('has resource requests and limits, the metrics port, probes and scrape discovery', () => {
      const c = onlyContainer(ds());
      for (const k of ['requests', 'limits'])
        for (const r of ['cpu', 'memory']) expect(get(c.body, `resources.${k}.${r}`), `${k}.${r}`).toBeDefined();
      const ports = arr(c.body.ports, 'ports').map((p) => get(p, 'containerPort'));
      expect(ports).toEqual(expect.arrayContaining([9836, 9837]));
      expect(get(c.body, 'readinessProbe.httpGet.path')).toBe('/health');
      expect(get(ds().body, 'spec.template.metadata.annotations')).toMatchObject({
        'prometheus.io/scrape': 'true',
        'prometheus.io/port': '9836',
      });
      const svc = k8s('Service', 'slurm-otel-node');
      expect(get(svc.body, 'spec.clusterIP')).toBe('None');
    });

    it.runIf(canMakeDeviceNodes('the node DaemonSet command line'))(
      'its command line runs: one cycle on a synthetic node with the same flags',
      () => {
        const roots = writeTree(tmpDir(), demoTree({ layout: 'v2-sluid', nonJobHolder: false }));
        const local: Readonly<Record<string, string>> = {
          '--procfs-root': roots.procfs,
          '--sysfs-root': roots.sysfs,
          '--cgroup-root': roots.cgroupfs,
        };
        const args = onlyContainer(ds()).args.map((a) => {
          const flag = a.split('=')[0] as string;
          return local[flag] !== undefined ? `${flag}=${local[flag]}` : a;
        });
        expect(args[0]).toBe('node');
        // The tree's fds get real device nodes, which the command finds by stat as on a node.
        withDeviceNodes(roots);
        const r = cli([...args, '--once', '--log-level', 'error']);
        expect(r.code, r.stderr).toBe(0);
        expect(r.stdout).toMatch(/^ib_slurm_port_attribution\{device="mlx5_0",port="1",status="sole"\} 1$/m);
        const envNames = onlyContainer(ds())
          .env.map((e) => str(e.name, 'env name'))
          .filter((n) => n.startsWith('IB_SLURM_EXPORTER_'));
        const text = help('node');
        for (const n of envNames) expect(text, `${n} is not a variable of slurm-otel node`).toContain(`env: ${n}`);
      },
    );
  });

  describe('cluster agent', () => {
    const dep = (): K8sObject => k8s('Deployment', 'slurm-otel-cluster');
    const envValue = (name: string): unknown => onlyContainer(dep()).env.find((e) => e.name === name);

    it('is one non-root, capability-free replica with the token from a Secret', () => {
      expect(get(dep().body, 'spec.replicas')).toBe(1);
      const c = onlyContainer(dep());
      expect(c.args).toEqual(['cluster']);
      expect(get(envValue('SLURM_EXPORTER_TOKEN'), 'valueFrom.secretKeyRef.key')).toBeDefined();
      expect(get(dep().body, 'spec.template.spec.securityContext.runAsNonRoot')).toBe(true);
      expect(get(c.body, 'securityContext.capabilities.drop')).toEqual(['ALL']);
      expect(get(c.body, 'securityContext.capabilities.add')).toBeUndefined();
      expect(get(c.body, 'securityContext.readOnlyRootFilesystem')).toBe(true);
      const ports = arr(get(k8s('Service', 'slurm-otel-cluster').body, 'spec.ports'), 'service ports').map((p) =>
        get(p, 'port'),
      );
      expect(ports).toEqual(expect.arrayContaining([8080, 8081]));
    });

    /** The objects `kubectl apply -k deploy/kubernetes` creates: the files kustomization.yaml lists. */
    const installed = (): K8sObject[] => {
      const files = strs(doc('deploy/kubernetes/kustomization.yaml').resources, 'resources').map(
        (r) => `deploy/kubernetes/${r}`,
      );
      return k8sObjects().filter((o) => files.some((f) => o.file.endsWith(f)));
    };

    it('as installed, may get exactly one Secret, <cluster-name>-rest-jwt-key, in the cluster namespace', () => {
      const sa = str(get(dep().body, 'spec.template.spec.serviceAccountName'), 'serviceAccountName');
      k8s('ServiceAccount', sa);
      const clusterName = str(get(envValue('SLURM_EXPORTER_CLUSTER_NAME'), 'value'), 'cluster name');
      const clusterNs = str(get(envValue('SLURM_EXPORTER_CLUSTER_NAMESPACE'), 'value'), 'cluster namespace');
      const roles = installed().filter((o) => o.kind === 'Role' || o.kind === 'ClusterRole');
      expect(roles.map((r) => r.kind)).toEqual(['Role']);
      const role = roles[0] as K8sObject;
      expect(role.namespace).toBe(clusterNs);
      expect(get(role.body, 'rules')).toEqual([
        { apiGroups: [''], resources: ['secrets'], resourceNames: [`${clusterName}-rest-jwt-key`], verbs: ['get'] },
      ]);
      const bindings = installed().filter((o) => o.kind === 'RoleBinding' || o.kind === 'ClusterRoleBinding');
      expect(bindings.map((b) => b.kind)).toEqual(['RoleBinding']);
      const binding = bindings[0] as K8sObject;
      expect(binding.namespace).toBe(clusterNs);
      expect(get(binding.body, 'roleRef')).toEqual({
        apiGroup: 'rbac.authorization.k8s.io',
        kind: 'Role',
        name: role.name,
      });
      expect(get(binding.body, 'subjects')).toEqual([{ kind: 'ServiceAccount', name: sa, namespace: 'slurm-otel' }]);
    });

    it('the topology sub-collector is off as installed; its RBAC file grants list on pods (cluster namespace) and nodes only', () => {
      expect(envValue('SLURM_EXPORTER_OPTIONAL_COLLECTORS')).toBeUndefined();
      const sa = str(get(dep().body, 'spec.template.spec.serviceAccountName'), 'serviceAccountName');
      const clusterNs = str(get(envValue('SLURM_EXPORTER_CLUSTER_NAMESPACE'), 'value'), 'cluster namespace');
      const file = 'deploy/kubernetes/cluster-agent-topology-rbac.yaml';
      expect(installed().filter((o) => o.file.endsWith(file))).toEqual([]);
      const objects = k8sObjects().filter((o) => o.file.endsWith(file));
      const role = (kind: string) => {
        const found = objects.filter((o) => o.kind === kind);
        expect(found.map((o) => o.kind)).toEqual([kind]);
        return found[0] as K8sObject;
      };
      expect(objects.map((o) => o.kind).sort()).toEqual(['ClusterRole', 'ClusterRoleBinding', 'Role', 'RoleBinding']);
      expect(role('Role').namespace).toBe(clusterNs);
      expect(get(role('Role').body, 'rules')).toEqual([{ apiGroups: [''], resources: ['pods'], verbs: ['list'] }]);
      expect(get(role('ClusterRole').body, 'rules')).toEqual([
        { apiGroups: [''], resources: ['nodes'], verbs: ['list'] },
      ]);
      for (const [binding, kind] of [
        ['RoleBinding', 'Role'],
        ['ClusterRoleBinding', 'ClusterRole'],
      ] as const) {
        const b = role(binding);
        if (binding === 'RoleBinding') expect(b.namespace).toBe(clusterNs);
        expect(get(b.body, 'roleRef')).toEqual({ apiGroup: 'rbac.authorization.k8s.io', kind, name: role(kind).name });
        expect(get(b.body, 'subjects')).toEqual([{ kind: 'ServiceAccount', name: sa, namespace: 'slurm-otel' }]);
      }
    });

    // The cluster agent is being written: once `slurm-otel cluster` exists, the variables used
    // here must be its own.
    const hasCluster = /^\s+cluster\b/m.test(cli(['--help']).stdout);
    it.runIf(hasCluster)('uses SLURM_EXPORTER_* variables that slurm-otel cluster knows', () => {
      const text = help('cluster');
      const names = onlyContainer(dep())
        .env.map((e) => str(e.name, 'env name'))
        .filter((n) => n.startsWith('SLURM_EXPORTER_'));
      for (const n of names) expect(text, `${n} is not a variable of slurm-otel cluster`).toContain(`env: ${n}`);
    });
  });
});

// ---------------------------------------------------------------------------------------------

/** A Kubernetes memory quantity or a GOMEMLIMIT value, in MiB. */
function mib(q: string): number {
  const m = /^(\d+(?:\.\d+)?)(Ki|Mi|Gi|KiB|MiB|GiB)?$/.exec(q);
  if (!m) throw new Error(`not a memory quantity: ${q}`);
  const unit = (m[2] ?? '').replace(/B$/, '');
  const factor: Record<string, number> = { '': 1 / (1024 * 1024), Ki: 1 / 1024, Mi: 1, Gi: 1024 };
  return Number(m[1]) * (factor[unit] as number);
}

/** The gateway's peak RSS for the largest documented push (docs/benchmarks.md), in MiB. */
function documentedGatewayPeakMib(): number {
  const m = /\|\s*gateway peak RSS\s*\|\s*([\d,]+) MiB\s*\|/.exec(read('docs/benchmarks.md'));
  if (!m) throw new Error('docs/benchmarks.md: no "gateway peak RSS" row');
  return Number((m[1] as string).replace(/,/g, ''));
}

/** The labels of every workload's pods in `namespace`, by workload. */
function podLabels(namespace: string): { name: string; labels: Obj; ports: string[] }[] {
  return k8sObjects()
    .filter((o) => ['Deployment', 'DaemonSet', 'StatefulSet'].includes(o.kind) && o.namespace === namespace)
    .map((o) => ({
      name: o.name,
      labels: obj(get(o.body, 'spec.template.metadata.labels'), `${o.name} pod labels`),
      ports: arr(get(o.body, 'spec.template.spec.containers'), `${o.name} containers`).flatMap((c) =>
        arr(get(c, 'ports') ?? [], 'ports').map((p) => String(get(p, 'name'))),
      ),
    }));
}
const selects = (selector: unknown, labels: Obj): boolean =>
  Object.entries(obj(get(selector, 'matchLabels'), 'matchLabels')).every(([k, v]) => labels[k] === v);

describe('authentication where data enters', () => {
  const gateway = (): Obj => doc('otel-config/collector-gateway.yaml');
  const agent = (): Obj => doc('otel-config/collector-agent.yaml');
  /** The bearertokenauth extension a server's auth names, checked to be defined and started. */
  const authenticator = (cfg: Obj, server: string, file: string): string => {
    const id = str(get(cfg, `${server}.auth.authenticator`), `${file} ${server}.auth.authenticator`);
    expect(id.split('/')[0], `${file} ${server}`).toBe('bearertokenauth');
    expect(strs(get(cfg, 'service.extensions'), `${file} service.extensions`)).toContain(id);
    expect(get(cfg, `extensions.${id}.wait_for_token_file`), `${file} ${id}: no start without the file`).toBe(true);
    return id;
  };

  it('the gateway requires the agents’ token on both OTLP receivers and another on :8889', () => {
    const file = 'otel-config/collector-gateway.yaml';
    const cfg = gateway();
    const grpc = authenticator(cfg, 'receivers.otlp.protocols.grpc', file);
    const http = authenticator(cfg, 'receivers.otlp.protocols.http', file);
    const scrape = authenticator(cfg, 'exporters.prometheus', file);
    expect(grpc).toBe(http);
    expect(scrape).not.toBe(grpc);
    expect(get(cfg, `extensions.${grpc}.filename`)).toMatch(/^\$\{env:OTLP_TOKEN_FILE:-\/[^}]+\}$/);
    expect(get(cfg, `extensions.${scrape}.filename`)).toMatch(/^\$\{env:SCRAPE_TOKEN_FILE:-\/[^}]+\}$/);
  });

  it('the node-local Collector requires the node’s token and forwards the same file’s token', () => {
    const file = 'otel-config/collector-agent.yaml';
    const cfg = agent();
    const id = authenticator(cfg, 'receivers.otlp.protocols.grpc', file);
    expect(authenticator(cfg, 'receivers.otlp.protocols.http', file)).toBe(id);
    const filename = str(get(cfg, `extensions.${id}.filename`), 'filename');
    expect(get(cfg, 'exporters.otlp_grpc.headers.authorization')).toBe(`Bearer \${file:${filename}}`);
  });

  it('the TLS overlays give every server of the gateway a certificate and the forwarder a CA', () => {
    const tls = doc('otel-config/collector-gateway-tls.yaml');
    for (const server of ['receivers.otlp.protocols.grpc', 'receivers.otlp.protocols.http', 'exporters.prometheus']) {
      expect(get(tls, `${server}.tls.cert_file`), server).toMatch(/TLS_CERT_FILE/);
      expect(get(tls, `${server}.tls.key_file`), server).toMatch(/TLS_KEY_FILE/);
    }
    const fwd = doc('otel-config/collector-agent-tls.yaml');
    expect(get(fwd, 'exporters.otlp_grpc.tls.insecure')).toBe(false);
    expect(get(fwd, 'exporters.otlp_grpc.tls.ca_file')).toMatch(/TLS_CA_FILE/);
  });

  it('docker-compose: the demo pushes with the token file the gateway checks, Prometheus holds the scrape token', () => {
    const compose = doc('docker-compose.yml');
    const secretFile = (name: string): string => str(get(compose, `secrets.${name}.file`), `secret ${name}`);
    const collector = obj(get(compose, 'services.otel-collector'), 'otel-collector');
    const mounted = (service: Obj, path: string): string => {
      const m = /^\/run\/secrets\/([\w-]+)$/.exec(path);
      expect(m, `${path} is a compose secret`).not.toBeNull();
      expect(strs(service.secrets, 'secrets')).toContain(m?.[1]);
      return secretFile(m?.[1] as string);
    };
    const otlp = mounted(collector, str(get(collector, 'environment.OTLP_TOKEN_FILE'), 'OTLP_TOKEN_FILE'));
    const scrape = mounted(collector, str(get(collector, 'environment.SCRAPE_TOKEN_FILE'), 'SCRAPE_TOKEN_FILE'));
    const demo = obj(get(compose, 'services.slurm-otel'), 'slurm-otel');
    const command = strs(demo.command, 'command');
    const flag = command.indexOf('--otlp-bearer-token-file');
    expect(flag).toBeGreaterThan(0);
    expect(mounted(demo, command[flag + 1] as string)).toBe(otlp);
    const volumes = strs(get(compose, 'services.prometheus.volumes'), 'prometheus volumes');
    expect(volumes).toContain(`${scrape}:/etc/prometheus/secrets/scrape-token:ro`);
    const job = arr(get(doc('otel-config/prometheus.yml'), 'scrape_configs'), 'jobs').find(
      (j) => get(j, 'job_name') === 'otel-gateway',
    );
    expect(get(job, 'authorization.credentials_file')).toBe('secrets/scrape-token');
    // The node-local Collector forwards the file as it is: the token alone, no newline.
    for (const f of [otlp, scrape]) expect(read(f)).toMatch(/^\S+$/);
  });
});

describe('Kubernetes: who reaches the gateway, and memory for the documented peak', () => {
  const gw = (): K8sObject => k8s('Deployment', 'otel-gateway');

  it('every NetworkPolicy selects pods that exist, lets in only pods that exist, on ports they name', () => {
    const policies = k8sObjects().filter((o) => o.kind === 'NetworkPolicy');
    expect(policies.map((p) => p.name)).toContain('otel-gateway');
    for (const p of policies) {
      const pods = podLabels(p.namespace as string);
      const targets = pods.filter((w) => selects(get(p.body, 'spec.podSelector'), w.labels));
      expect(targets.length, `${p.name} selects a workload`).toBeGreaterThan(0);
      for (const [i, rule] of arr(get(p.body, 'spec.ingress'), `${p.name} ingress`).entries()) {
        for (const peer of arr(get(rule, 'from'), `${p.name} ingress[${i}].from`)) {
          // A peer in this namespace must match a workload here; one elsewhere names its namespace.
          if (get(peer, 'namespaceSelector') !== undefined) continue;
          expect(
            pods.some((w) => selects(get(peer, 'podSelector'), w.labels)),
            `${p.name} ingress[${i}] peer ${JSON.stringify(peer)} matches a workload`,
          ).toBe(true);
        }
        for (const port of arr(get(rule, 'ports'), `${p.name} ingress[${i}].ports`))
          for (const t of targets)
            expect(t.ports, `${t.name} names port ${get(port, 'port')}`).toContain(get(port, 'port'));
      }
    }
  });

  it('the gateway’s receivers admit only the agents, :8889 only a peer outside the agents', () => {
    const policy = k8s('NetworkPolicy', 'otel-gateway');
    const rules = arr(get(policy.body, 'spec.ingress'), 'ingress');
    const portsOf = (r: unknown): unknown[] => arr(get(r, 'ports'), 'ports').map((p) => get(p, 'port'));
    const receivers = rules.filter((r) => portsOf(r).some((p) => p === 'otlp-http' || p === 'otlp-grpc'));
    expect(receivers).toHaveLength(1);
    const peers = arr(get(receivers[0], 'from'), 'from');
    const admitted = podLabels('slurm-otel')
      .filter((w) =>
        peers.some(
          (peer) => get(peer, 'namespaceSelector') === undefined && selects(get(peer, 'podSelector'), w.labels),
        ),
      )
      .map((w) => w.name)
      .sort();
    expect(admitted).toEqual(['slurm-otel-cluster', 'slurm-otel-node']);
    expect(peers.every((peer) => get(peer, 'namespaceSelector') === undefined)).toBe(true);
    const exposition = rules.filter((r) => portsOf(r).includes('prom-exporter'));
    expect(exposition).toHaveLength(1);
    expect(portsOf(exposition[0])).not.toContain('otlp-http');
    for (const peer of arr(get(exposition[0], 'from'), 'from'))
      expect(get(peer, 'namespaceSelector'), ':8889 admits a peer of another namespace').toBeDefined();
  });

  it('the gateway’s memory: the limiter refuses only above the documented peak, and acts below the container limit', () => {
    const c = onlyContainer(gw());
    const limit = mib(str(get(c.body, 'resources.limits.memory'), 'limits.memory'));
    const request = mib(str(get(c.body, 'resources.requests.memory'), 'requests.memory'));
    const peak = documentedGatewayPeakMib();
    const limiter = obj(get(doc('otel-config/collector-gateway.yaml'), 'processors.memory_limiter'), 'memory_limiter');
    // Percentages of the container's limit, or absolute MiB when a site sets them.
    const hard =
      limiter.limit_mib !== undefined ? Number(limiter.limit_mib) : (Number(limiter.limit_percentage) / 100) * limit;
    const spike =
      limiter.spike_limit_mib !== undefined
        ? Number(limiter.spike_limit_mib)
        : (Number(limiter.spike_limit_percentage) / 100) * limit;
    const goMemLimit = mib(str(c.env.find((e) => e.name === 'GOMEMLIMIT')?.value, 'GOMEMLIMIT'));
    expect(hard - spike, `the soft limit (${hard - spike} MiB) is above the peak (${peak} MiB)`).toBeGreaterThan(peak);
    expect(hard, 'the hard limit is below the container limit').toBeLessThan(limit);
    expect(limit - hard, 'room for what the Go heap does not count').toBeGreaterThanOrEqual(512);
    expect(goMemLimit).toBeGreaterThanOrEqual(hard - spike);
    expect(goMemLimit).toBeLessThanOrEqual(hard + 1);
    expect(request, 'the request holds the peak').toBeGreaterThanOrEqual(peak);
  });

  it('the gateway reads its token files from the Secret it mounts; the agents mount theirs', () => {
    const c = onlyContainer(gw());
    const mounts = arr(c.body.volumeMounts, 'volumeMounts').map((m) => obj(m, 'mount'));
    const volumes = arr(get(gw().body, 'spec.template.spec.volumes'), 'volumes').map((v) => obj(v, 'volume'));
    for (const name of ['OTLP_TOKEN_FILE', 'SCRAPE_TOKEN_FILE']) {
      const file = str(c.env.find((e) => e.name === name)?.value, name);
      const mount = mounts.find((m) => path.posix.dirname(file) === m.mountPath);
      const volume = volumes.find((v) => v.name === mount?.name);
      expect(get(volume, 'secret.secretName'), `${name} is in a Secret`).toBe('otel-gateway-tokens');
      expect(mount?.readOnly).toBe(true);
    }
    for (const [kind, name, env] of [
      ['DaemonSet', 'slurm-otel-node', 'IB_SLURM_EXPORTER_OTLP_BEARER_TOKEN_FILE'],
      ['Deployment', 'slurm-otel-cluster', 'SLURM_EXPORTER_OTLP_BEARER_TOKEN_FILE'],
    ] as const) {
      const o = k8s(kind, name);
      const v = arr(get(o.body, 'spec.template.spec.volumes'), 'volumes').find(
        (x) => get(x, 'secret.secretName') === 'slurm-otel-otlp-token',
      );
      expect(get(v, 'secret.optional'), `${name}: pull-only sites need no Secret`).toBe(true);
      const m = arr(onlyContainer(o).body.volumeMounts, 'mounts').find((x) => get(x, 'name') === get(v, 'name'));
      // The push settings are commented out (push is opt-in); they name the mounted file.
      expect(read(o.file)).toContain(
        `# - name: ${env}\n            #   value: ${str(get(m, 'mountPath'), 'mountPath')}/token`,
      );
    }
  });
});
