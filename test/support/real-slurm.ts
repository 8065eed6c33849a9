/**
 * A real Slurm 22.05 (Debian 12 packages) on loopback for integration tests.
 *
 *   const gate = realSlurmGate();               // at module level
 *   describe.skipIf(gate.skip)('…', () => {
 *     let slurm: RealSlurm;
 *     beforeAll(async () => { slurm = await startRealSlurm(); }, REAL_SLURM_START_TIMEOUT_MS);
 *     afterAll(() => slurm?.stop(), 60_000);
 *     // fetch(`${slurm.restUrl}/slurm/v0.0.38/nodes`, { headers: slurm.restHeaders() })
 *     // await slurm.run(['sbatch', '--parsable', '--wrap', 'sleep 60'])
 *   });
 *
 * Policy: in CI (`CI` set) a Slurm that cannot run here is a test FAILURE
 * (realSlurmGate throws), never a skip; elsewhere the suite is skipped with a
 * loud message naming the Debian packages to install.
 *
 * The scripts live in scripts/real-slurm/ (up.sh, down.sh, lib.sh: knobs and
 * the reasons behind each setting). Every start is a new cluster that cannot
 * collide with any other on the host, ours or not (another test run, another
 * engineer's Slurm, a chrooted newer Slurm): a random per-run token names its
 * cluster, its nodes and its state dir and picks its first job id, its ports
 * come from a leased block checked free, and up.sh refuses to start when its
 * state dir, a job cgroup named after one of its nodes, or one of its ports
 * already exists (see runIdentity, claimPorts).
 *
 * `release: '24.11' | '26.05'` runs the same scripts inside a Debian chroot holding that
 * release (see real-slurm-release.ts); `realSlurmGate(release)` checks that one can be had.
 */
import { execFile, spawnSync } from 'node:child_process';
import { randomInt } from 'node:crypto';
import net from 'node:net';
import {
  accessSync,
  closeSync,
  constants,
  existsSync,
  openSync,
  readFileSync,
  statSync,
  unlinkSync,
  writeSync,
} from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  chrootCacheDir,
  chrootLayer,
  chrootUnavailable,
  type CommandLayer,
  hostLayer,
  releaseScriptEnv,
  SLURM_RELEASES,
  type SlurmRelease,
} from './real-slurm-release.js';

export { SLURM_RELEASES, type SlurmRelease } from './real-slurm-release.js';

/** chroot.sh's LD_PRELOAD helper inside the chroot: /proc/<pid>/cgroup shows only the 0:: line. */
const CG2ONLY = '/opt/slurm-otel/cg2only.so';

/** Debian packages up.sh installs (plus mariadb-server and slurmdbd with `dbd`). */
export const REAL_SLURM_PACKAGES = [
  'slurm-wlm',
  'slurmctld',
  'slurmd',
  'slurmrestd',
  'slurm-wlm-jwt-plugin',
  'munge',
  'slurm-client',
] as const;

/** Bound for startRealSlurm when packages may still need installing; use as beforeAll timeout. */
export const REAL_SLURM_START_TIMEOUT_MS = 330_000;

export interface RealSlurmOptions {
  /** State dir; default `${REAL_SLURM_STATE ?? '/tmp/slurm-otel-real-slurm'}-<instance>-<token>`, new per run. */
  stateDir?: string;
  /** Added to every default port; default 100 * a leased block checked free (see claimPorts). */
  portOffset?: number;
  /** Node count 2..16, default 4 (cpu = first half, gpu = second half with 2 fake GPUs each). */
  nodes?: number;
  /** Also run mariadb + slurmdbd (accounting, /slurmdb/*, GPU TRES). */
  dbd?: boolean;
  /** Bound on up.sh (includes apt-get install on a fresh machine). Default 300 s. */
  timeoutMs?: number;
  /** A short lower-case word in the run's names (state dir, node prefix), e.g. `cg`. Default `s`. */
  instance?: string;
  /**
   * Process tracking: none (default), v1 (real v1 job cgroups made by slurmstepd) or v2 (24.11 /
   * 26.05 only: cgroup/v2 in the chroot, the host's cgroup2 hierarchy mounted at its
   * /sys/fs/cgroup, cg2only.so preloaded; see lib.sh).
   */
  cgroup?: 'none' | 'v1' | 'v2';
  /**
   * Node names are <prefix>1..N. Default `<instance><token>n`, new per run: job cgroups are named
   * after the node (slurm_<node>, <node>_slurmstepd.scope), so no two clusters on a host may share
   * node names.
   */
  nodePrefix?: string;
  /** FirstJobId; default a random multiple of 1000 up to 66 M, new per run. */
  firstJobId?: number;
  /** Extra REAL_SLURM_* knobs for up.sh/down.sh (see scripts/real-slurm/lib.sh). */
  env?: Record<string, string>;
  /** Slurm release: '22.05' (default, the host's packages) or '24.11' / '26.05' (in a chroot). */
  release?: SlurmRelease;
}

export interface RunOptions {
  /** Default 30 s; the child is killed after it. */
  timeoutMs?: number;
  /** Reject when the exit code is not 0 (default true). */
  check?: boolean;
  /** Extra environment for this command. */
  env?: Record<string, string>;
  /** Working directory; default the cluster's scratch dir (jobs write slurm-<id>.out there). */
  cwd?: string;
}

export interface RunResult {
  code: number;
  stdout: string;
  stderr: string;
}

export interface RealSlurm {
  /** e.g. http://127.0.0.1:16920 */
  restUrl: string;
  /** `scontrol token username=root` with a long lifespan (default 7 days). */
  token: string;
  /** User the token is for ("root"). */
  user: string;
  /** The cluster's HS256 key, readable by this process: sign your own tokens with it. */
  jwtKeyPath: string;
  /** Node names, first half in partition cpu (default), second half in gpu. */
  nodes: readonly string[];
  /** ClusterName in slurm.conf (and in slurmdbd), new per run. */
  clusterName: string;
  /** FirstJobId: this cluster's job ids start here. */
  firstJobId: number;
  /** slurm.conf of this cluster (what SLURM_CONF must point at). */
  slurmConf: string;
  stateDir: string;
  /** Everything up.sh wrote to `<state>/env`. */
  env: Readonly<Record<string, string>>;
  /**
   * Auth headers for slurmrestd. Slurm 22.05 rejects a token without
   * X-SLURM-USER-NAME (401 "missing header user name").
   */
  restHeaders(token?: string): Record<string, string>;
  /** Run a Slurm client (sbatch, squeue, sinfo, scontrol, scancel, …) against this cluster. */
  run(cmd: string[], opts?: RunOptions): Promise<RunResult>;
  /**
   * Stop or start one node's slurmd (scripts/real-slurm/slurmd.sh): a stopped
   * slurmd shows NOT_RESPONDING after ~13 s and DOWN after ~21 s; started
   * again, the node returns to service by itself (ReturnToService=2).
   */
  slurmd(action: 'start' | 'stop', node: string): Promise<void>;
  /** Stop every daemon of this cluster and remove its state dir (down.sh --wipe). Idempotent. */
  stop(): Promise<void>;
  /** The release it runs, and the data parsers (API versions) its slurmrestd serves. */
  release: SlurmRelease;
  dataParsers: readonly string[];
  /** slurmctld's port on 127.0.0.1 (26.05 serves its own /metrics/* there). */
  ctldPort: number;
  /** slurmctld -V, e.g. "26.05.5". */
  version: string;
  /** The chroot the cluster runs in (undefined for 22.05 on the host). */
  chrootDir?: string;
}

export type Availability = { ok: true } | { ok: false; why: string };

const here = dirname(fileURLToPath(import.meta.url));

/** scripts/real-slurm, found upwards from this file (works from test/ and from dist/test/). */
function scriptsDir(): string {
  let dir = here;
  for (let i = 0; i < 6; i++) {
    const candidate = join(dir, 'scripts', 'real-slurm');
    if (existsSync(join(candidate, 'up.sh'))) return candidate;
    dir = dirname(dir);
  }
  throw new Error(`scripts/real-slurm/up.sh not found above ${here}`);
}

export function isCI(): boolean {
  const ci = process.env.CI;
  return ci !== undefined && ci !== '' && ci !== '0' && ci.toLowerCase() !== 'false';
}

/**
 * Can a real Slurm run here? Needs Linux, root (slurmctld/slurmd run as
 * SlurmUser=root; apt-get needs it) and the Debian packages installed or
 * installable with apt-get. Cheap (one dpkg-query), synchronous.
 */
export function realSlurmAvailability(release: SlurmRelease = '22.05'): Availability {
  if (release !== '22.05') return chrootReleaseAvailability(release);
  if (process.platform !== 'linux') return { ok: false, why: `needs Linux (this is ${process.platform})` };
  if (process.getuid?.() !== 0) {
    return { ok: false, why: 'needs root: up.sh starts slurmctld/slurmd as root and may apt-get install' };
  }
  for (const tool of ['/bin/bash', '/usr/bin/flock']) {
    if (!existsSync(tool)) return { ok: false, why: `${tool} is missing` };
  }
  const q = spawnSync('dpkg-query', ['-W', '-f=${Package} ${db:Status-Status}\\n', ...REAL_SLURM_PACKAGES], {
    encoding: 'utf8',
    timeout: 10_000,
  });
  if (q.error) return { ok: false, why: `not a Debian system (dpkg-query: ${q.error.message})` };
  const installed = new Set(
    q.stdout
      .split('\n')
      .map((l) => l.trim().split(/\s+/))
      .filter((f) => f[1] === 'installed')
      .map((f) => f[0]),
  );
  const missing = REAL_SLURM_PACKAGES.filter((p) => !installed.has(p));
  if (missing.length === 0) return { ok: true };
  if (process.env.REAL_SLURM_INSTALL === '0') {
    return { ok: false, why: `missing Debian packages ${missing.join(' ')} and REAL_SLURM_INSTALL=0` };
  }
  if (!existsSync('/usr/bin/apt-get')) {
    return { ok: false, why: `missing Debian packages ${missing.join(' ')} and no apt-get to install them` };
  }
  return { ok: true }; // up.sh will apt-get install them
}

function chrootReleaseAvailability(release: SlurmRelease): Availability {
  if (process.platform !== 'linux') return { ok: false, why: `needs Linux (this is ${process.platform})` };
  if (process.getuid?.() !== 0) return { ok: false, why: 'needs root: chroot, mount and the Slurm daemons' };
  const why = chrootUnavailable(SLURM_RELEASES[release]);
  return why === undefined ? { ok: true } : { ok: false, why };
}

/**
 * The skip/fail policy for real-Slurm suites. Call at module level:
 * `describe.skipIf(realSlurmGate().skip)(…)`. In CI an unavailable Slurm
 * throws here, so the test file fails instead of silently skipping.
 */
export function realSlurmGate(release: SlurmRelease = '22.05'): { skip: boolean; why?: string } {
  const a = realSlurmAvailability(release);
  if (a.ok) return { skip: false };
  const suite = SLURM_RELEASES[release].suite;
  const install =
    suite === undefined
      ? `apt-get install -y ${REAL_SLURM_PACKAGES.join(' ')}`
      : `apt-get install -y debootstrap mariadb-server; scripts/real-slurm/chroot.sh ${suite} (Slurm ${release})`;
  if (isCI()) {
    throw new Error(
      `real Slurm is required in CI (CI=${process.env.CI}) but cannot run here: ${a.why}. ` +
        `Run the tests as root on Debian 12 (packages: ${install}).`,
    );
  }
  const bar = '!'.repeat(78);
  console.warn(
    `\n${bar}\n!! SKIPPING real-Slurm tests: ${a.why}\n!! To run them: as root on Debian 12, ${install}\n${bar}\n`,
  );
  return { skip: true, why: a.why };
}

/** Parse `export K=V` lines (values are plain: up.sh only writes [A-Za-z0-9._/:=-] text). */
export function parseEnvFile(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const raw of text.split('\n')) {
    const line = raw.trim().replace(/^export\s+/, '');
    const eq = line.indexOf('=');
    if (line === '' || line.startsWith('#') || eq <= 0) continue;
    out[line.slice(0, eq)] = line.slice(eq + 1);
  }
  return out;
}

/**
 * Environment for Slurm commands run by tests: the caller's environment minus
 * every SLURM_* and client-format variable. SLURM_JWT above all: when set,
 * sbatch/scontrol use auth/jwt with that token instead of munge, which this
 * cluster's slurmctld may reject (another cluster's or an expired token), and
 * vars like SQUEUE_FORMAT or SLURM_TIME_FORMAT would change output we parse.
 */
function slurmClientEnv(slurmConf: string, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (/^(SLURM_|SBATCH_|SALLOC_|SRUN_|SQUEUE_|SINFO_|SCONTROL_|SACCT_|SACCTMGR_|SCANCEL_)/.test(k)) continue;
    env[k] = v;
  }
  return { ...env, SLURM_CONF: slurmConf, ...extra };
}

interface ExecOutcome extends RunResult {
  error?: Error;
}

function exec(file: string, args: string[], opts: { env: NodeJS.ProcessEnv; timeoutMs: number; cwd?: string }) {
  return new Promise<ExecOutcome>((resolve) => {
    execFile(
      file,
      args,
      { env: opts.env, timeout: opts.timeoutMs, killSignal: 'SIGKILL', maxBuffer: 64 * 1024 * 1024, cwd: opts.cwd },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === 'number' ? error.code : -1) : 0;
        resolve({ code, stdout: String(stdout), stderr: String(stderr), ...(error ? { error } : {}) });
      },
    );
  });
}

function tail(text: string, lines = 30): string {
  return text.trimEnd().split('\n').slice(-lines).join('\n');
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Port blocks: offset 100 * block keeps every port (at most 27001 + 5600 + 16) below Linux's ephemeral range. */
const PORT_BLOCKS = 56;

/** The ports up.sh uses at `offset` (defaults of scripts/real-slurm/lib.sh). */
export function clusterPorts(offset: number, nodes: number, dbd: boolean): number[] {
  const ports = [16820 + offset, 26817 + offset];
  for (let i = 0; i < nodes; i++) ports.push(27001 + offset + i);
  if (dbd) ports.push(26819 + offset, 23306 + offset);
  return ports;
}

/** Whether something (anyone's) already listens on 127.0.0.1:port. */
function listening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = net.createServer();
    srv.once('error', () => resolve(true));
    srv.listen(port, '127.0.0.1', () => srv.close(() => resolve(false)));
  });
}

/**
 * Leases a block of ports for one run: a lease file per block holding "<pid> <token>", taken in
 * random order, skipping blocks leased by a live process and blocks where any port is already
 * listened on (by a Slurm that knows nothing of these leases). The lease keeps two of our runs
 * that start at once from picking the same free block.
 */
async function claimPorts(
  leaseBase: string,
  token: string,
  nodes: number,
  dbd: boolean,
): Promise<{ offset: number; release: () => void }> {
  const start = randomInt(PORT_BLOCKS);
  for (let i = 0; i < PORT_BLOCKS; i++) {
    const block = ((start + i) % PORT_BLOCKS) + 1;
    const lease = `${leaseBase}-ports-${block}.lease`;
    if (!takeLease(lease, `${process.pid} ${token}`)) continue;
    const release = () => {
      try {
        if (readFileSync(lease, 'utf8') === `${process.pid} ${token}`) unlinkSync(lease);
      } catch {
        /* already gone */
      }
    };
    const busy = await Promise.all(clusterPorts(100 * block, nodes, dbd).map(listening));
    if (!busy.includes(true)) return { offset: 100 * block, release };
    release();
  }
  throw new Error(`no free real-slurm port block (${leaseBase}-ports-*.lease held or their ports in use)`);
}

/** Creates `lease` holding `owner`, or takes it over from a dead owner; false when a live process holds it. */
function takeLease(lease: string, owner: string): boolean {
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      const fd = openSync(lease, 'wx', 0o644);
      writeSync(fd, owner);
      closeSync(fd);
      return true;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
    }
    let holder: number;
    try {
      holder = Number.parseInt(readFileSync(lease, 'utf8'), 10);
    } catch {
      continue; // removed meanwhile: try again
    }
    const ageMs = Date.now() - (statSafe(lease) ?? Date.now());
    if (Number.isInteger(holder) && holder > 0 ? alive(holder) : ageMs < 10_000) return false;
    try {
      unlinkSync(lease); // stale: its owner died (or it was left half-written); race for it again
    } catch {
      /* someone else removed it */
    }
  }
  return false;
}

function statSafe(file: string): number | undefined {
  try {
    return statSync(file).mtimeMs;
  } catch {
    return undefined;
  }
}

/** What makes one run's cluster its own: a random token in its names and a random first job id. */
export interface RunIdentity {
  readonly token: string;
  readonly stateDir: string;
  readonly clusterName: string;
  readonly nodePrefix: string;
  readonly firstJobId: number;
}

export function runIdentity(root: string, opts: RealSlurmOptions = {}): RunIdentity {
  const instance = opts.instance ?? 's';
  if (!/^[a-z][a-z0-9]{0,5}$/.test(instance)) throw new Error(`instance must be 1-6 of [a-z0-9] (got '${instance}')`);
  // 6 base-36 characters: 2 billion names, so two runs on one host practically never meet.
  const token = randomInt(36 ** 5, 36 ** 6).toString(36);
  return {
    token,
    stateDir: opts.stateDir ?? `${root}-${instance}-${token}`,
    clusterName: `so_${instance}_${token}`,
    nodePrefix: opts.nodePrefix ?? `${instance}${token}n`,
    // Slurm's default MaxJobId is 67,043,328: 66 M + the few jobs a test submits stays below it.
    firstJobId: opts.firstJobId ?? 1000 * randomInt(1, 66_000),
  };
}

/** Start a new cluster with up.sh and describe it. */
export async function startRealSlurm(opts: RealSlurmOptions = {}): Promise<RealSlurm> {
  const root = process.env.REAL_SLURM_STATE ?? '/tmp/slurm-otel-real-slurm';
  const id = runIdentity(root, opts);
  const nodeCount = opts.nodes ?? 4;
  const ports =
    opts.portOffset === undefined
      ? await claimPorts(root, id.token, nodeCount, opts.dbd ?? false)
      : { offset: opts.portOffset, release: () => {} };
  const { stateDir } = id;
  const dir = scriptsDir();
  const info = SLURM_RELEASES[opts.release ?? '22.05'];
  if (opts.cgroup === 'v2' && info.suite === undefined) {
    ports.release();
    throw new Error('cgroup v2 runs in a chroot release (24.11, 26.05): this host is hybrid');
  }
  const scriptEnv: NodeJS.ProcessEnv = {
    ...slurmClientEnv(join(stateDir, 'etc', 'slurm.conf')),
    REAL_SLURM_STATE: stateDir,
    // A new state dir every run: up.sh refuses one that exists (another cluster's, or a leftover).
    ...(opts.stateDir === undefined ? { REAL_SLURM_FRESH: '1' } : {}),
    REAL_SLURM_PORT_OFFSET: String(ports.offset),
    REAL_SLURM_NODES: String(nodeCount),
    ...(opts.dbd ? { REAL_SLURM_DBD: '1' } : {}),
    ...(opts.cgroup ? { REAL_SLURM_CGROUP: opts.cgroup } : {}),
    ...(opts.cgroup === 'v2' ? { REAL_SLURM_PRELOAD: CG2ONLY } : {}),
    REAL_SLURM_NODE_PREFIX: id.nodePrefix,
    REAL_SLURM_CLUSTER: id.clusterName,
    REAL_SLURM_FIRST_JOB_ID: String(id.firstJobId),
    ...(opts.env ?? {}),
  };
  const newer = await prepareRelease(info, dir, scriptEnv, opts, ports.offset).catch((e: unknown) => {
    ports.release();
    throw e;
  });
  const layer = newer?.layer ?? hostLayer(dir);
  const runScript = (name: string, args: string[], timeoutMs: number) => {
    const [file, argv] = layer.script(name, args);
    return exec(file, argv, { env: scriptEnv, timeoutMs });
  };
  // --wipe: the state dir is this run's alone; REAL_SLURM_KEEP=1 keeps it (logs) for a post-mortem.
  const downArgs = process.env.REAL_SLURM_KEEP === '1' ? [] : ['--wipe'];
  const down = async () => {
    const r = await runScript('down.sh', downArgs, 90_000);
    await newer?.stopDb(downArgs);
    return r;
  };

  const up = await runScript('up.sh', [], opts.timeoutMs ?? 300_000);
  if (up.code !== 0) {
    // A timeout kills bash only; down.sh stops whatever daemons it had started. The logs stay.
    await runScript('down.sh', [], 90_000);
    await newer?.stopDb();
    ports.release();
    const killed = (up.error as { killed?: boolean } | undefined)?.killed;
    const reason = killed ? `killed after ${opts.timeoutMs ?? 300_000} ms` : `exit ${up.code}`;
    throw new Error(`real-slurm up.sh failed: ${reason}; logs in ${stateDir}/log/\n${tail(up.stderr)}`);
  }

  const envFile = join(stateDir, 'env');
  const env = parseEnvFile(readFileSync(envFile, 'utf8'));
  const need = (k: string): string => {
    const v = env[k];
    if (!v) throw new Error(`${envFile} lacks ${k}`);
    return v;
  };
  const slurmConf = need('SLURM_CONF');
  const jwtKeyPath = need('SLURM_JWT_KEY');
  accessSync(jwtKeyPath, constants.R_OK); // fail early and clearly if the key is not readable
  const workDir = env.REAL_SLURM_WORKDIR ?? stateDir;
  const user = need('SLURM_REST_USER');
  const token = need('SLURM_REST_TOKEN');
  let stopped = false;

  return {
    restUrl: need('SLURM_REST_URL'),
    token,
    user,
    jwtKeyPath,
    nodes: Array.from({ length: nodeCount }, (_, i) => `${id.nodePrefix}${i + 1}`),
    clusterName: id.clusterName,
    firstJobId: id.firstJobId,
    slurmConf,
    stateDir,
    env,
    restHeaders: (t = token) => ({ 'X-SLURM-USER-NAME': user, 'X-SLURM-USER-TOKEN': t }),
    async run(cmd, runOpts = {}) {
      const { file, args, cwd } = layer.client(cmd, runOpts.cwd ?? workDir);
      const r = await exec(file, args, {
        env: slurmClientEnv(slurmConf, runOpts.env),
        timeoutMs: runOpts.timeoutMs ?? 30_000,
        cwd,
      });
      if ((runOpts.check ?? true) && r.code !== 0) {
        throw new Error(`${cmd.join(' ')} failed (${r.error?.message ?? `exit ${r.code}`}):\n${tail(r.stderr, 10)}`);
      }
      return { code: r.code, stdout: r.stdout, stderr: r.stderr };
    },
    async slurmd(action, node) {
      const r = await runScript('slurmd.sh', [action, node], 60_000);
      if (r.code !== 0) throw new Error(`slurmd.sh ${action} ${node} failed (exit ${r.code}):\n${tail(r.stderr)}`);
    },
    release: info.release,
    dataParsers: info.dataParsers,
    ctldPort: Number.parseInt(need('REAL_SLURM_CTLD_PORT'), 10),
    version: env.REAL_SLURM_SLURMCTLD_VERSION ?? '',
    ...(newer ? { chrootDir: newer.root } : {}),
    async stop() {
      if (stopped) return;
      stopped = true;
      const r = await down();
      ports.release();
      if (r.code !== 0) throw new Error(`real-slurm down.sh failed (exit ${r.code}):\n${tail(r.stderr)}`);
    },
  };
}

interface PreparedRelease {
  root: string;
  layer: CommandLayer;
  /** `--wipe`: its state dir goes too (logs and all), as down.sh's does. */
  stopDb(args?: string[]): Promise<void>;
}

/**
 * For 24.11 / 26.05: make or reuse the release's chroot (chroot.sh, which also copies the
 * scripts in), start the host MariaDB its slurmdbd uses (db.sh) and add the release's knobs to
 * `scriptEnv`. Undefined for 22.05, which runs on the host as before.
 */
async function prepareRelease(
  info: (typeof SLURM_RELEASES)[SlurmRelease],
  dir: string,
  scriptEnv: NodeJS.ProcessEnv,
  opts: RealSlurmOptions,
  portOffset: number,
): Promise<PreparedRelease | undefined> {
  if (info.suite === undefined) return undefined;
  const made = await exec('/bin/bash', [join(dir, 'chroot.sh'), info.suite], { env: scriptEnv, timeoutMs: 600_000 });
  const root = made.stdout.trim().split('\n').pop() ?? '';
  if (made.code !== 0 || root !== chrootCacheDir(info.suite)) {
    throw new Error(`real-slurm chroot.sh ${info.suite} failed (exit ${made.code}):\n${tail(made.stderr)}`);
  }
  const dbPort = Number.parseInt(scriptEnv.REAL_SLURM_DB_PORT ?? '', 10) || 23306 + portOffset;
  const knobs = releaseScriptEnv(info, opts.dbd === true, dbPort);
  const extra = [knobs.REAL_SLURM_EXTRA_CONF, opts.env?.REAL_SLURM_EXTRA_CONF].filter((x) => x);
  Object.assign(scriptEnv, knobs, opts.env ?? {}, extra.length ? { REAL_SLURM_EXTRA_CONF: extra.join('\n') } : {});
  const db = (action: 'up' | 'down', args: string[] = []) =>
    exec('/bin/bash', [join(dir, 'db.sh'), action, ...args], { env: scriptEnv, timeoutMs: 120_000 });
  if (opts.dbd) {
    const r = await db('up');
    if (r.code !== 0) throw new Error(`real-slurm db.sh up failed (exit ${r.code}):\n${tail(r.stderr)}`);
  }
  return {
    root,
    layer: chrootLayer(root),
    stopDb: async (args = []) => {
      if (opts.dbd) await db('down', args);
    },
  };
}
