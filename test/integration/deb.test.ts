/**
 * The Debian package (scripts/deb/build.sh) in a Debian trixie chroot without Node
 * (scripts/sea/chroot.sh): `dpkg -i` installs it, its files are where the units expect them, the
 * node agent's system user exists, and each unit's own ExecStart line, read from the installed
 * unit and run the way systemd would (its User=, its Environment= lines and EnvironmentFile=,
 * the example file as installed), works: `--once`, and the node agent serving until SIGTERM.
 * Only what points the agents at this test's inputs is added: the synthetic tree and free ports
 * for the node agent, a fake slurmrestd on loopback for the cluster agent.
 *
 * Then its maintainer scripts, through dpkg itself: install, upgrade, remove and purge, with the
 * real deb-systemd-helper and deb-systemd-invoke. No systemd runs in a chroot, so there (only)
 * a stand-in systemctl (test/support/systemctl-standin.sh) records the calls and which units are
 * active, and /run/systemd/system says that systemd is the init, as on a booted node.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeCluster } from '../../src/demo/fake-cluster.js';
import { startFakeSlurmrestd } from '../../src/demo/fake-slurmrestd.js';
import { parseExposition, select } from '../support/exposition.js';
import {
  canRunChroot,
  debPackage,
  demoTreeIn,
  nonodeChroot,
  PREPARE_LIMIT_MS,
  Sandbox,
  singleExecutable,
} from '../support/nonode.js';
import { freePort, waitFor } from '../support/tools.js';

const UNITS = '/usr/lib/systemd/system';
const TREE = '/srv/tree';
const STOP_DEADLINE_MS = 30_000;
/** Each test: a first cycle (waited for up to 30 s) and a stop (up to STOP_DEADLINE_MS), with room. */
const TEST_LIMIT_MS = 120_000;
const PACKAGE_VERSION = (JSON.parse(fs.readFileSync('package.json', 'utf8')) as { version: string }).version;

interface Service {
  execStart: string[];
  user?: string;
  group?: string;
  environment: Record<string, string>;
  environmentFiles: string[];
}

/** The [Service] lines the test runs by: as systemd reads them, for the simple lines these units have. */
function parseService(text: string): Service {
  const service: Service = { execStart: [], environment: {}, environmentFiles: [] };
  let section = '';
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    if (line.startsWith('[')) {
      section = line;
      continue;
    }
    if (section !== '[Service]') continue;
    const eq = line.indexOf('=');
    const [key, value] = [line.slice(0, eq), line.slice(eq + 1)];
    if (key === 'ExecStart') service.execStart = value.split(/\s+/);
    else if (key === 'User') service.user = value;
    else if (key === 'Group') service.group = value;
    // A dynamic user is nobody's kind of user: no home, no files, no groups.
    else if (key === 'DynamicUser' && value === 'yes') [service.user, service.group] = ['nobody', 'nogroup'];
    else if (key === 'Environment') Object.assign(service.environment, parseAssignments(value.split(/\s+/)));
    else if (key === 'EnvironmentFile') service.environmentFiles.push(value);
  }
  return service;
}

/** KEY=VALUE lines (comments and blank lines skipped), as an EnvironmentFile= holds them. */
function parseAssignments(lines: string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of lines.map((l) => l.trim())) {
    if (line === '' || line.startsWith('#')) continue;
    const eq = line.indexOf('=');
    out[line.slice(0, eq)] = line.slice(eq + 1);
  }
  return out;
}

let box: Sandbox;

/** The unit as installed, with the variables of its Environment= lines and its files (which win). */
function installedService(name: string): Service & { env: Record<string, string> } {
  const service = parseService(fs.readFileSync(box.host(`${UNITS}/${name}`), 'utf8'));
  const env = { ...service.environment };
  for (const file of service.environmentFiles) {
    const optional = file.startsWith('-');
    const p = box.host(optional ? file.slice(1) : file);
    if (fs.existsSync(p)) Object.assign(env, parseAssignments(fs.readFileSync(p, 'utf8').split('\n')));
    else if (!optional) throw new Error(`${name}: EnvironmentFile ${file} is missing`);
  }
  return { ...service, env };
}

/** The command line that runs `service` as its user: setpriv, as systemd's User= does. */
function asUser(service: Service, extra: string[] = []): [string, string[]] {
  const user = service.user ?? 'root';
  const [cmd = '', ...args] = service.execStart;
  return [
    '/usr/bin/setpriv',
    [`--reuid=${user}`, `--regid=${service.group ?? user}`, '--clear-groups', '--', cmd, ...args, ...extra],
  ];
}

const treeEnv = {
  IB_SLURM_EXPORTER_SYSFS_ROOT: `${TREE}/sys`,
  IB_SLURM_EXPORTER_PROCFS_ROOT: `${TREE}/proc`,
  IB_SLURM_EXPORTER_CGROUP_ROOT: `${TREE}/cgroup`,
};

describe.runIf(canRunChroot)('the .deb in a Debian chroot without Node', { timeout: TEST_LIMIT_MS }, () => {
  beforeAll(async () => {
    const deb = debPackage(singleExecutable());
    nonodeChroot();
    box = new Sandbox();
    box.put(deb, '/tmp/slurm-otel.deb');
    // Real device nodes for its fds, found by stat as on a node.
    demoTreeIn(box, TREE);
    const install = await box.run('/usr/bin/dpkg', ['-i', '/tmp/slurm-otel.deb']);
    expect(install.code, install.stdout + install.stderr).toBe(0);
  }, PREPARE_LIMIT_MS);
  afterAll(async () => box?.remove());

  it('is installed with its files, conffiles and the node agent user', async () => {
    const status = await box.run('/usr/bin/dpkg-query', ['-W', '-f=${Status} ${Version}', 'slurm-otel']);
    expect(status.stdout).toBe(`install ok installed ${PACKAGE_VERSION}`);
    const files = (await box.run('/usr/bin/dpkg', ['-L', 'slurm-otel'])).stdout.split('\n');
    for (const f of [
      '/usr/bin/slurm-otel',
      `${UNITS}/slurm-otel-node.service`,
      `${UNITS}/slurm-otel-cluster.service`,
      '/usr/lib/sysusers.d/slurm-otel.conf',
      '/etc/default/slurm-otel-node',
      '/etc/default/slurm-otel-cluster',
    ])
      expect(files).toContain(f);
    const conffiles = (await box.run('/usr/bin/dpkg-query', ['-W', '-f=${Conffiles}', 'slurm-otel'])).stdout;
    expect(conffiles).toMatch(/^ \/etc\/default\/slurm-otel-node [0-9a-f]{32}$/m);
    expect(conffiles).toMatch(/^ \/etc\/default\/slurm-otel-cluster [0-9a-f]{32}$/m);
    expect(fs.statSync(box.host('/etc/default/slurm-otel-cluster')).mode & 0o777).toBe(0o600);
    const user = await box.run('/usr/bin/getent', ['passwd', 'slurm-otel']);
    expect(user.stdout).toMatch(/^slurm-otel:x:\d+:\d+:[^:]*:\/:\/usr\/sbin\/nologin$/m);
    expect(Number(user.stdout.split(':')[2])).toBeLessThan(1000);
    const version = await box.run('/usr/bin/slurm-otel', ['--version']);
    expect(version.stdout.trim()).toBe(PACKAGE_VERSION);
    const which = await box.run('/bin/sh', ['-c', 'which node; echo "which=$?"']);
    expect(which.stdout.trim()).toBe('which=1');
  });

  it("the node unit's ExecStart, as its User with its environment, runs --once", async () => {
    const unit = installedService('slurm-otel-node.service');
    expect(unit.execStart).toEqual(['/usr/bin/slurm-otel', 'node']);
    expect(unit.user).toBe('slurm-otel');
    expect(unit.env.IB_SLURM_EXPORTER_LOG_FORMAT).toBe('json');
    const [cmd, args] = asUser(unit, ['--once']);
    const r = await box.run(cmd, args, { ...unit.env, ...treeEnv });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^ib_slurm_port_attribution\{device="mlx5_0",port="1",status="sole"\} 1$/m);
    expect(r.stdout).toMatch(/^ib_slurm_job_processes\{job_id="918002"\} 3$/m);
  });

  it("the node unit's ExecStart serves /metrics, and stops on SIGTERM with status 0", async () => {
    const unit = installedService('slurm-otel-node.service');
    const [metrics, monitoring] = [await freePort(), await freePort()];
    const [cmd, args] = asUser(unit);
    const agent = box.start(cmd, args, {
      ...unit.env,
      ...treeEnv,
      IB_SLURM_EXPORTER_METRICS_BIND_ADDRESS: `127.0.0.1:${metrics}`,
      IB_SLURM_EXPORTER_MONITORING_BIND_ADDRESS: `127.0.0.1:${monitoring}`,
    });
    const body = await waitFor('the agent to serve its first cycle', async () => {
      const res = await fetch(`http://127.0.0.1:${metrics}/metrics`);
      const text = await res.text();
      return res.status === 200 && text.includes('ib_slurm_port_attribution') ? text : undefined;
    });
    expect(body).toMatch(/^ib_slurm_job_processes\{job_id="918001"\} \d+$/m);
    agent.kill('SIGTERM');
    let exit: Awaited<typeof agent.exited> | undefined;
    void agent.exited.then((e) => (exit = e));
    const done = await waitFor('the agent to exit after SIGTERM', () => exit, STOP_DEADLINE_MS);
    expect(done.code, done.stderr).toBe(0);
    // The unit's IB_SLURM_EXPORTER_LOG_FORMAT=json: one JSON object per line.
    const last = JSON.parse(done.stderr.trim().split('\n').pop() ?? '') as { msg?: string };
    expect(last.msg).toBe('stopped');
  });

  it("the cluster unit's ExecStart, with the example file's variables, runs --once against slurmrestd", async () => {
    const unit = installedService('slurm-otel-cluster.service');
    expect(unit.execStart).toEqual(['/usr/bin/slurm-otel', 'cluster']);
    expect(unit.env.SLURM_EXPORTER_CLUSTER_NAME).toBe('mycluster');
    const cluster = new FakeCluster({ nodes: 3, seed: 7, clusterName: 'mycluster' });
    cluster.advance(10 * 60_000);
    const server = await startFakeSlurmrestd({ cluster, versions: ['v0.0.44'], host: '127.0.0.1', port: 0 });
    try {
      const [cmd, args] = asUser(unit, ['--once', '--token-source', 'none']);
      const r = await box.run(cmd, args, { ...unit.env, SLURM_EXPORTER_SLURM_API_SERVER: server.url });
      expect(r.code, r.stderr).toBe(0);
      expect(select(parseExposition(r.stdout), 'slurm_node_info').length).toBe(3);
    } finally {
      await server.close();
    }
  });
});

const UNIT_NAMES = ['slurm-otel-cluster.service', 'slurm-otel-node.service'];
const WANTS = '/etc/systemd/system/multi-user.target.wants';
const DSH_STATE = '/var/lib/systemd/deb-systemd-helper-enabled';
const CALLS = '/var/log/systemctl-standin.calls';
const ACTIVE = '/run/systemctl-standin/active';
/** dpkg unpacking 120 MB on a loaded machine: generous. */
const DPKG_LIMIT_MS = 240_000;

/** `deb` rebuilt as `version`, its control scripts changed by `edit` (a directory: DEBIAN/ in it). */
function repack(deb: string, version: string, out: string, edit: (debian: string) => void = () => {}): void {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'slurm-otel-repack-'));
  try {
    const tree = path.join(dir, 'tree');
    const run = (args: string[]) => {
      const r = spawnSync('dpkg-deb', args, { encoding: 'utf8' });
      if (r.status !== 0) throw new Error(`dpkg-deb ${args.join(' ')}: ${r.stderr}`);
    };
    run(['-R', deb, tree]);
    const control = path.join(tree, 'DEBIAN/control');
    fs.writeFileSync(control, fs.readFileSync(control, 'utf8').replace(/^Version: .*$/m, `Version: ${version}`));
    edit(path.join(tree, 'DEBIAN'));
    run(['--root-owner-group', '-Zzstd', '-z1', '-b', tree, out]);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/** The maintainer scripts of the package before they stopped and started anything. */
function olderScripts(debian: string): void {
  fs.rmSync(path.join(debian, 'prerm'), { force: true });
  fs.writeFileSync(
    path.join(debian, 'postinst'),
    '#!/bin/sh\nset -e\nif [ "$1" = configure ]; then\n  systemd-sysusers slurm-otel.conf\n' +
      '  if [ -d /run/systemd/system ]; then systemctl daemon-reload || true; fi\nfi\n',
  );
  fs.writeFileSync(
    path.join(debian, 'postrm'),
    '#!/bin/sh\nset -e\nif [ -d /run/systemd/system ]; then systemctl daemon-reload || true; fi\n',
  );
}

describe.runIf(canRunChroot)(
  'the .deb through dpkg: install, upgrade, remove, purge',
  { timeout: DPKG_LIMIT_MS },
  () => {
    let life: Sandbox;
    const upgraded = `${PACKAGE_VERSION}+1`;

    /** Runs dpkg with `args` in the sandbox; fails the test with its output unless it succeeds. */
    async function dpkg(...args: string[]): Promise<void> {
      const r = await life.run('/usr/bin/dpkg', args, {}, DPKG_LIMIT_MS);
      expect(r.code, r.stdout + r.stderr).toBe(0);
    }

    /** The stand-in's calls since the last one, one a line, then forgets them. */
    function takeCalls(): string[] {
      const file = life.host(CALLS);
      const calls = fs.existsSync(file) ? fs.readFileSync(file, 'utf8').split('\n').filter(Boolean) : [];
      fs.rmSync(file, { force: true });
      return calls;
    }

    const active = (): string[] => (fs.existsSync(life.host(ACTIVE)) ? fs.readdirSync(life.host(ACTIVE)).sort() : []);
    const linkOf = (unit: string): string => life.host(`${WANTS}/${unit}`);
    const installedVersion = async (): Promise<string> =>
      (await life.run('/usr/bin/dpkg-query', ['-W', '-f=${Status} ${Version}', 'slurm-otel'])).stdout;

    beforeAll(() => {
      const deb = debPackage(singleExecutable());
      nonodeChroot();
      life = new Sandbox();
      life.put(deb, '/tmp/current.deb');
      repack(deb, upgraded, life.host('/tmp/upgraded.deb'));
      repack(deb, `${PACKAGE_VERSION}~older`, life.host('/tmp/older.deb'), olderScripts);
      life.put('test/support/systemctl-standin.sh', '/usr/bin/systemctl', 0o755);
      fs.mkdirSync(life.host('/run/systemd/system'), { recursive: true });
    }, PREPARE_LIMIT_MS);
    afterAll(async () => life?.remove());

    // The tests below are one package's life, in order: each starts where the one before ended.
    it('a first install enables and starts nothing, and records each unit for a purge', async () => {
      await dpkg('-i', '/tmp/current.deb');
      expect(takeCalls()).toEqual(['--system daemon-reload']);
      expect(active()).toEqual([]);
      for (const unit of UNIT_NAMES) {
        expect(fs.existsSync(linkOf(unit))).toBe(false);
        const state = fs.readFileSync(life.host(`${DSH_STATE}/${unit}.dsh-also`), 'utf8');
        expect(state.trim()).toBe(`${WANTS}/${unit}`);
      }
    });

    it('an upgrade stops the running agents first and starts them again after, enabled or not', async () => {
      // The site enables the node agent and starts both (the cluster agent by hand, not enabled).
      for (const args of [
        ['enable', UNIT_NAMES[1]!],
        ['start', ...UNIT_NAMES],
      ]) {
        const r = await life.run('/usr/bin/systemctl', args);
        expect(r.code, r.stderr).toBe(0);
      }
      takeCalls();
      await dpkg('-i', '/tmp/upgraded.deb');
      expect(await installedVersion()).toBe(`install ok installed ${upgraded}`);
      const calls = takeCalls();
      const stop = calls.indexOf(`stop ${UNIT_NAMES.join(' ')}`);
      expect(stop, calls.join('\n')).toBeGreaterThanOrEqual(0);
      for (const unit of UNIT_NAMES) {
        // Asked before the stop, started after it: the old prerm's list, the new postinst's start.
        expect(calls.indexOf(`--system --quiet is-active ${unit}`)).toBeLessThan(stop);
        expect(calls.indexOf(`--system start ${unit}`)).toBeGreaterThan(stop);
      }
      expect(active()).toEqual(UNIT_NAMES);
      expect(fs.existsSync(life.host('/run/slurm-otel.dpkg-stopped'))).toBe(false);
      expect(fs.readlinkSync(linkOf(UNIT_NAMES[1]!))).toBe(`/usr/lib/systemd/system/${UNIT_NAMES[1]}`);
    });

    it('a removal stops the agents; the enable link stays until purge, as Debian keeps configuration', async () => {
      await dpkg('-r', 'slurm-otel');
      const calls = takeCalls();
      expect(calls).toContain(`stop ${UNIT_NAMES.join(' ')}`);
      expect(calls.some((c) => / (start|restart|try-restart) /.test(c))).toBe(false);
      expect(active()).toEqual([]);
      expect(fs.lstatSync(linkOf(UNIT_NAMES[1]!)).isSymbolicLink()).toBe(true);
      expect(fs.existsSync(life.host(`/usr/lib/systemd/system/${UNIT_NAMES[1]}`))).toBe(false);
    });

    it('a purge removes the enable link and deb-systemd-helper state: nothing dangles', async () => {
      // Where this starts: the node agent's link, left by the removal, pointing at nothing.
      expect(fs.lstatSync(linkOf(UNIT_NAMES[1]!), { throwIfNoEntry: false })?.isSymbolicLink()).toBe(true);
      await dpkg('--purge', 'slurm-otel');
      // lstat, not exists: a dangling link is there even though its target is not.
      const left = UNIT_NAMES.filter((unit) => fs.lstatSync(linkOf(unit), { throwIfNoEntry: false }) !== undefined);
      expect(left, 'enable links left after the purge').toEqual([]);
      for (const unit of UNIT_NAMES) expect(fs.existsSync(life.host(`${DSH_STATE}/${unit}.dsh-also`))).toBe(false);
      expect(fs.existsSync(life.host(WANTS))).toBe(false);
      expect((await installedVersion()).trim()).toBe('');
    });

    it('an upgrade from a package whose prerm stopped nothing restarts what runs', async () => {
      await dpkg('-i', '/tmp/older.deb');
      const start = await life.run('/usr/bin/systemctl', ['start', UNIT_NAMES[1]!]);
      expect(start.code, start.stderr).toBe(0);
      takeCalls();
      await dpkg('-i', '/tmp/current.deb');
      const calls = takeCalls();
      expect(calls).toContain(`try-restart ${UNIT_NAMES.join(' ')}`);
      expect(calls.some((c) => c.startsWith('stop '))).toBe(false);
      expect(active()).toEqual([UNIT_NAMES[1]]);
    });
  },
);
