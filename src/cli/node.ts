/** `slurm-otel node`: options (flag > IB_SLURM_EXPORTER_* > default) → the node agent. */
import fs from 'node:fs';
import os from 'node:os';
import { Command, Option } from 'commander';
import type { Logger, LogFormat } from '../log.js';
import { runNodeOnce, startNodeAgent, type NodeAgentOptions } from '../node/agent.js';
import { QP_COUNTERS_MODES, type QpCountersMode } from '../node/qp/qp-source.js';
import type { GpuAllocationOptions } from '../node/read/gres-source.js';
import { loadFdReader, type FdReader } from '../node/read/fd-native.js';
import { DEFAULT_ROOTS, type Roots } from '../node/read/roots.js';
import { UNREADABLE_POLICIES, type UnreadablePolicy } from '../node/read/unreadable.js';
import { CollectionIncomplete, ConfigError, printExposition, runUntilSignal } from './common.js';
import { warnUnmatchedPatterns } from './device-names.js';
import { deviceFilter, devicePatternOptions, type DevicePatternFlags } from './device-patterns.js';
import { disableMetricsOption, nodeDisabledMetrics } from './disable-metrics.js';
import { addExportOptions, checkExportFiles, envOption, exportSettings, type ExportFlags } from './export-options.js';
import type { Env } from './otel.js';
import { keepRefusals, refusals, SettingErrors } from './settings.js';
import { NODE_AGENT_V8_FLAGS, setV8Flags } from './v8-tuning.js';
import { duration, oneOf, positiveDuration } from './values.js';

const opt = envOption('IB_SLURM_EXPORTER_');
/** One rdma run is cut off after this (or the collection interval, if shorter). */
const RDMA_TIMEOUT_MS = 10_000;
/** slurmd -G is read again this often: its GRES list changes only when slurmd is reconfigured. */
const GRES_MAP_INTERVAL_MS = 600_000;

/** What a node agent takes apart from where the node's tree is and the host's tools (the demo brings its own). */
export interface NodeCycleFlags extends ExportFlags {
  collectionInterval: number;
  fdRescanInterval: number;
  unreadableProcesses: UnreadablePolicy;
  nodeName: string;
  squeuePath?: string;
  squeueTimeout: number;
  jobMetadata: 'none' | 'squeue';
  jobUsage: 'on' | 'off';
  fdReader: 'native' | 'fs';
}

/** Where Slurm's GPU allocation on the node is read from (node and explain). */
export interface GpuAllocationFlags extends RootFlags {
  gpuAllocation: 'none' | 'slurm';
  slurmdPath: string;
  scontrolPath: string;
  nodeName: string;
}

/** The options that point the node agent at the host: its filesystems, its rdma tool and slurmd. */
export interface HostFlags extends RootFlags, Omit<GpuAllocationFlags, 'nodeName'> {
  qpCounters: QpCountersMode;
  rdmaPath: string;
}

export interface NodeFlags extends NodeCycleFlags, HostFlags, DevicePatternFlags {
  disableMetrics?: string;
}

/** Options every command reading a node takes (node, demo, explain). */
export function addRootOptions(cmd: Command): Command {
  return cmd
    .addOption(opt('--sysfs-root <dir>', 'sysfs mount point', 'SYSFS_ROOT').default(DEFAULT_ROOTS.sysfs))
    .addOption(opt('--procfs-root <dir>', 'procfs mount point', 'PROCFS_ROOT').default(DEFAULT_ROOTS.procfs))
    .addOption(
      opt('--cgroup-root <dir>', 'cgroup filesystem mount point', 'CGROUP_ROOT').default(DEFAULT_ROOTS.cgroupfs),
    )
    .addOption(
      opt(
        '--nvidia-proc-root <dir>',
        "where the NVIDIA driver's procfs files are read (devices, driver/nvidia/…); default the procfs root",
        'NVIDIA_PROC_ROOT',
      ),
    );
}

export interface RootFlags {
  sysfsRoot: string;
  procfsRoot: string;
  cgroupRoot: string;
  nvidiaProcRoot?: string;
}

/** Each root flag with what is lost without it, for the message when it names no directory. */
const ROOT_FLAGS: readonly (readonly [keyof RootFlags, string, string])[] = [
  ['sysfsRoot', '--sysfs-root', 'no HCA could be found'],
  ['procfsRoot', '--procfs-root', "no process's fds could be read"],
  ['cgroupRoot', '--cgroup-root', 'no Slurm job could be found'],
  ['nvidiaProcRoot', '--nvidia-proc-root', 'no GPU could be found'],
];

/** The kernel filesystems a root can be told apart by (statfs f_type). */
const FS_NAMES: ReadonlyMap<number, string> = new Map([
  [0x9fa0, 'procfs'],
  [0x62656572, 'sysfs'],
  [0x27e0eb, 'a cgroup (v1) filesystem'],
  [0x63677270, 'cgroup2'],
]);

/**
 * The kernel filesystems each root must not be on: another kernel filesystem than its own is a
 * root given in the wrong place (`--procfs-root /sys`). An ordinary directory is taken as it is: a
 * copy, a chroot's tree or a test's synthetic node. The cgroup root may be a v1 tmpfs.
 */
const WRONG_FS: Readonly<Record<keyof RootFlags, readonly string[]>> = {
  sysfsRoot: ['procfs', 'a cgroup (v1) filesystem', 'cgroup2'],
  procfsRoot: ['sysfs', 'a cgroup (v1) filesystem', 'cgroup2'],
  cgroupRoot: ['procfs', 'sysfs'],
  nvidiaProcRoot: ['sysfs', 'a cgroup (v1) filesystem', 'cgroup2'],
};

/** Why a root cannot be used, or undefined. */
function rootProblem(key: keyof RootFlags, dir: string): string | undefined {
  try {
    if (!fs.statSync(dir).isDirectory()) return 'is not a directory';
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    return code === 'ENOENT' ? 'does not exist' : `cannot be read (${code ?? (err as Error).message})`;
  }
  const on = FS_NAMES.get(filesystemType(dir));
  return on !== undefined && WRONG_FS[key].includes(on) ? `is on ${on}, not the filesystem it names` : undefined;
}

/** statfs f_type of a directory; -1 when it cannot be asked (then its type is not held against it). */
function filesystemType(dir: string): number {
  try {
    return Number(fs.statfsSync(dir).type);
  } catch {
    return -1;
  }
}

/**
 * Every root that is missing, not a directory, or on the wrong kernel filesystem, one message
 * each: a configuration error at the start, not cycle after cycle of processes "gone" or a node
 * without HCAs.
 */
export function rootErrors(f: RootFlags): string[] {
  const out: string[] = [];
  for (const [key, flag, lost] of ROOT_FLAGS) {
    const dir = f[key];
    const what = dir === undefined ? undefined : rootProblem(key, dir);
    if (what !== undefined) out.push(`${flag} ${dir} ${what}: ${lost}`);
  }
  return out;
}

/** The roots, each checked (rootErrors). */
export function existingRoots(f: RootFlags): Roots {
  const errors = rootErrors(f);
  if (errors.length > 0) throw new ConfigError(errors.join('\n'));
  return rootsOf(f);
}

export function rootsOf(f: RootFlags): Roots {
  return {
    sysfs: f.sysfsRoot,
    procfs: f.procfsRoot,
    cgroupfs: f.cgroupRoot,
    ...(f.nvidiaProcRoot === undefined ? {} : { nvidiaProcfs: f.nvidiaProcRoot }),
  };
}

/** What an unreadable fd table outside every Slurm job costs; node and explain take it. */
export function unreadableOption(): Option {
  return opt(
    '--unreadable-processes <policy>',
    'strict: a process outside every Slurm job whose fd table cannot be read makes every port incomplete; ignore-outside-jobs: it is assumed to hold no HCA',
    'UNREADABLE_PROCESSES',
  )
    .default('strict')
    .argParser(oneOf(UNREADABLE_POLICIES));
}

function nodeNameOption(d: NodeDefaults): Option {
  return opt('--node-name <name>', 'Slurm node name (squeue --nodelist, host.name)', 'NODE_NAME').default(
    d.nodeName ?? os.hostname().split('.')[0],
    // Described, not printed: --help and the docs must read the same on every machine.
    d.nodeName ?? HOST_NAME_DEFAULT,
  );
}

/** What --node-name defaults to, in words (its value is this machine's). */
const HOST_NAME_DEFAULT = 'the host name up to its first dot';

/** Defaults a subcommand may change (the demo listens on loopback and cycles faster). */
export interface NodeDefaults {
  readonly collectionInterval: [number, string];
  readonly metricsBind: string;
  readonly monitoringBind: string;
  readonly logFormat: LogFormat;
  readonly nodeName?: string;
}

const NODE_DEFAULTS: NodeDefaults = {
  collectionInterval: [15_000, '15s'],
  metricsBind: ':9836',
  monitoringBind: ':9837',
  logFormat: 'json',
};

export function addNodeOptions(cmd: Command, d: NodeDefaults = NODE_DEFAULTS): Command {
  const withExport = addExportOptions(
    addHostToolOptions(addCycleOptions(addRootOptions(cmd), d)),
    'IB_SLURM_EXPORTER_',
    d,
  );
  for (const o of devicePatternOptions()) withExport.addOption(o);
  return withExport.addOption(disableMetricsOption('IB_SLURM_EXPORTER_'));
}

/** The node options that do not name anything on the host: the demo takes these and brings the rest. */
export function addCycleOptions(cmd: Command, d: NodeDefaults): Command {
  return cmd
    .addOption(
      opt('--collection-interval <duration>', 'how often a cycle reads the node', 'COLLECTION_INTERVAL')
        .default(...d.collectionInterval)
        .argParser(positiveDuration),
    )
    .addOption(
      opt('--fd-rescan-interval <duration>', 'every fd link is read again at least this often', 'FD_RESCAN_INTERVAL')
        .default(60_000, '60s')
        .argParser(duration),
    )
    .addOption(unreadableOption())
    .addOption(nodeNameOption(d))
    .addOption(opt('--squeue-path <path>', 'resolve SLUIDs with a background squeue (off by default)', 'SQUEUE_PATH'))
    .addOption(
      opt('--squeue-timeout <duration>', 'timeout of one squeue run', 'SQUEUE_TIMEOUT')
        .default(10_000, '10s')
        .argParser(positiveDuration),
    )
    .addOption(
      opt(
        '--job-metadata <source>',
        'none, or squeue: add user_name, account and slurm_partition labels to job series (squeue from --squeue-path or PATH)',
        'JOB_METADATA',
      )
        .default('none')
        .argParser(oneOf(['none', 'squeue'] as const)),
    )
    .addOption(
      opt(
        '--job-usage <on|off>',
        "each job's CPU time, throttling, memory (in use, peak, limit) and OOM kills from its cgroup: one small read of each file per job per cycle",
        'JOB_USAGE',
      )
        .default('on')
        .argParser(oneOf(['on', 'off'] as const)),
    )
    .addOption(
      opt(
        '--fd-reader <reader>',
        "native: read each process's fd table with the compiled reader the package carries, where it loads (else as fs, and the log says why); fs: through Node's fs alone",
        'FD_READER',
      )
        .default('native')
        .argParser(oneOf(['native', 'fs'] as const)),
    );
}

/** The host's tools (rdma, slurmd, scontrol) and what the agent asks of them. */
function addHostToolOptions(cmd: Command): Command {
  return addGpuAllocationTools(cmd)
    .addOption(
      opt(
        '--qp-counters <mode>',
        'per-job counters on shared ports from per-PID QP counters (rdma statistic qp): off; observe: read them; manage: also turn auto type,pid on where the mode is off (needs CAP_NET_ADMIN) and off again at exit',
        'QP_COUNTERS',
      )
        .default('off')
        .argParser(oneOf(QP_COUNTERS_MODES)),
    )
    .addOption(
      opt(
        '--rdma-path <path>',
        "the iproute2 rdma tool (--qp-counters, and the kernel's list of verbs contexts read when a process's fds cannot all be known)",
        'RDMA_PATH',
      ).default('rdma'),
    );
}

/** Slurm's GPU allocation: the switch and the Slurm commands it runs (node, explain). */
function addGpuAllocationTools(cmd: Command): Command {
  return cmd
    .addOption(
      opt(
        '--gpu-allocation <source>',
        'none, or slurm: which GPUs Slurm gave each job here (slurmd -G, and scontrol show job -d once per job, in the background); a job holding a GPU it was not given is then not attributed',
        'GPU_ALLOCATION',
      )
        .default('none')
        .argParser(oneOf(['none', 'slurm'] as const)),
    )
    .addOption(
      opt('--slurmd-path <path>', 'slurmd, for its GRES list (--gpu-allocation slurm)', 'SLURMD_PATH').default(
        'slurmd',
      ),
    )
    .addOption(
      opt('--scontrol-path <path>', "scontrol, for each job's GRES (--gpu-allocation slurm)", 'SCONTROL_PATH').default(
        'scontrol',
      ),
    );
}

/** The GPU allocation options and --node-name, for explain (node takes --node-name with the cycle options). */
export function addGpuAllocationOptions(cmd: Command): Command {
  return addGpuAllocationTools(cmd).addOption(nodeNameOption(NODE_DEFAULTS));
}

/** Where and how to read Slurm's GPU allocation on this node. */
export function gpuAllocationSettings(f: GpuAllocationFlags): Omit<GpuAllocationOptions, 'logger' | 'onError'> {
  return {
    slurmd: { path: f.slurmdPath },
    scontrol: { path: f.scontrolPath },
    nodeName: f.nodeName,
    minIntervalMs: 0,
    mapIntervalMs: GRES_MAP_INTERVAL_MS,
    timeoutMs: 10_000,
  };
}

/** A node agent's options but where its tree is: the demo writes its own, the node command reads the host's. */
export type TreelessAgentOptions = Omit<NodeAgentOptions, 'collector'> & {
  readonly collector: Omit<NodeAgentOptions['collector'], 'roots'>;
};

/** The fd scan's native reader where --fd-reader asks for it and it loads (fd-native.ts). */
function fdReaderOption(f: NodeCycleFlags): { fdReader?: FdReader } {
  const load = f.fdReader === 'native' ? loadFdReader() : undefined;
  return load?.reader === undefined ? {} : { fdReader: load.reader };
}

/** Says which reader reads fd tables, and why not the native one where it was asked for and did not load. */
function logFdReader(f: NodeCycleFlags, logger: Logger): void {
  if (f.fdReader === 'fs')
    return logger.info({ fd_reader: 'fs' }, "fd tables are read through Node's fs (--fd-reader fs)");
  const load = loadFdReader();
  if (load.reader !== undefined) return logger.info({ fd_reader: 'native' }, 'fd tables are read by the native reader');
  logger.warn(
    { fd_reader: 'fs', reason: load.why },
    "the native fd reader did not load: fd tables are read through Node's fs",
  );
}

export function cycleAgentOptions(f: NodeCycleFlags, env: Env): TreelessAgentOptions {
  return {
    ...exportSettings(f, env, { serviceName: 'slurm-otel-node', hostName: f.nodeName }),
    collector: {
      fdRescanIntervalMs: f.fdRescanInterval,
      unreadableProcesses: f.unreadableProcesses,
      jobUsage: f.jobUsage === 'on',
      ...fdReaderOption(f),
    },
    squeue: f.squeuePath
      ? { path: f.squeuePath, nodeName: f.nodeName, minIntervalMs: f.collectionInterval, timeoutMs: f.squeueTimeout }
      : undefined,
    jobMetadata:
      f.jobMetadata === 'squeue'
        ? {
            path: f.squeuePath ?? 'squeue',
            nodeName: f.nodeName,
            minIntervalMs: f.collectionInterval,
            timeoutMs: f.squeueTimeout,
          }
        : undefined,
  };
}

/**
 * Every setting the node agent cannot start with, checked before anything is built: `refused`
 * (values the option parsers refused), the roots, the device patterns, the metric names and the
 * files read at start. Throws one ConfigError naming them all.
 */
export function checkNodeSettings(f: NodeFlags, refused: readonly string[] = []): void {
  const errors = new SettingErrors(refused);
  errors.add(...rootErrors(f));
  errors.check(() => deviceFilter(f));
  errors.check(() => nodeDisabledMetrics(f.disableMetrics));
  checkExportFiles(errors, f);
  errors.throwIfAny();
}

export function nodeAgentOptions(f: NodeFlags, env: Env, refused: readonly string[] = []): NodeAgentOptions {
  checkNodeSettings(f, refused);
  const base = cycleAgentOptions(f, env);
  const timeoutMs = Math.min(RDMA_TIMEOUT_MS, f.collectionInterval);
  const devices = deviceFilter(f);
  return {
    ...base,
    disabledMetrics: nodeDisabledMetrics(f.disableMetrics),
    collector: {
      ...base.collector,
      roots: existingRoots(f),
      // The kernel's list of verbs contexts bounds what a process whose fds cannot all be read costs.
      contexts: { path: f.rdmaPath, timeoutMs },
      ...(devices === undefined ? {} : { devices }),
    },
    qpCounters: f.qpCounters === 'off' ? undefined : { path: f.rdmaPath, mode: f.qpCounters, timeoutMs },
    gpuAllocation:
      f.gpuAllocation === 'slurm'
        ? { ...gpuAllocationSettings(f), minIntervalMs: f.collectionInterval, timeoutMs: f.squeueTimeout }
        : undefined,
  };
}

export function nodeCommand(env: Env): Command {
  const cmd = addNodeOptions(new Command('node').description('node agent: HCA counters attributed to Slurm jobs'));
  return keepRefusals(cmd.option('--once', 'run one cycle, print the Prometheus exposition to stdout and exit')).action(
    async (f: NodeFlags, self: Command) => {
      const opts = nodeAgentOptions(f, env, refusals(self));
      warnUnmatchedPatterns(f, opts.collector.roots, opts.logger);
      if (f.once) {
        const once = await runNodeOnce(opts);
        if (once.failed !== undefined) throw new CollectionIncomplete(`collection failed: ${once.failed}`);
        printExposition(once.text);
        return;
      }
      logFdReader(f, opts.logger);
      const v8Flags = setV8Flags(NODE_AGENT_V8_FLAGS);
      await runUntilSignal(() => startNodeAgent({ ...opts, v8Flags }), opts.logger);
    },
  );
}
