/**
 * The demo's named node tree: four jobs on one node.
 * Counter values move with `drift` so rates are visible.
 */
import type { FakeRdma, QpCounterJson } from './fake-rdma.js';
import {
  writeCounters,
  nvidiaDevices,
  standInGpus,
  stepd,
  type GpuSpec,
  type LinkSpec,
  rewriteJobUsage,
  type NvidiaSpec,
  type PciSpec,
  type HcaSpec,
  type JobSpec,
  type JobUsageSpec,
  type PortSpec,
  type ProcSpec,
  type TreeLayout,
  type TreeSpec,
} from './nodetree.js';

const PMA = {
  port_xmit_data: 0,
  port_rcv_data: 0,
  port_xmit_packets: 0,
  port_rcv_packets: 0,
  port_xmit_discards: 0,
  port_rcv_errors: 0,
  symbol_error: 0,
  link_downed: 0,
  link_error_recovery: 0,
  port_xmit_wait: 0,
  local_link_integrity_errors: 0,
  excessive_buffer_overrun_errors: 0,
  VL15_dropped: 0,
} as const;
const HW = {
  packet_seq_err: 0,
  out_of_sequence: 0,
  local_ack_timeout_err: 0,
  rnr_nak_retry_err: 0,
  out_of_buffer: 0,
  implied_nak_seq_err: 0,
  req_transport_retries_exceeded: 0,
  np_cnp_sent: 0,
  rp_cnp_handled: 0,
  lifespan: 10,
} as const;

/** A port with every counter at 0; `drift` moves them. */
export function port(linkLayer: PortSpec['linkLayer'], rate: string): PortSpec {
  return { linkLayer, rate, counters: { ...PMA }, hwCounters: { ...HW } };
}

export interface DemoOptions {
  readonly layout: TreeLayout;
  /** A storage client outside Slurm holding mlx5_3. */
  readonly nonJobHolder: boolean;
  /** Four stand-in GPUs in the node's PCI tree, held by the jobs as DEMO_GPU_HOLDERS says. */
  readonly gpus?: boolean;
  /** The jobs' CPU and memory use in their cgroup files (DEMO_USAGE). */
  readonly usage?: boolean;
}

/**
 * The demo node's PCI tree: two NUMA nodes, two root complexes each, and under each one PCIe
 * switch with one GPU and one HCA (PIX between them, NODE to the other root complex of the same
 * NUMA node, SYS to the other NUMA node), as on 8-GPU servers with one HCA per GPU.
 */
const DEMO_PCI_GROUPS = [
  { rc: '15', gpu: '18', hca: 'mlx5_0', numa: 0 },
  { rc: '37', gpu: '3a', hca: 'mlx5_1', numa: 0 },
  { rc: '97', gpu: '9a', hca: 'mlx5_2', numa: 1 },
  { rc: 'b7', gpu: 'ba', hca: 'mlx5_3', numa: 1 },
] as const;

function demoPci(): { gpus: GpuSpec[]; pci: PciSpec } {
  const gpus = standInGpus(DEMO_PCI_GROUPS.length).map((g, i) => ({
    ...g,
    busId: `0000:${DEMO_PCI_GROUPS[i]?.gpu as string}:00.0`,
  }));
  const devices: string[] = [];
  const numa: Record<string, number> = {};
  const hcas: Record<string, string> = {};
  for (const g of DEMO_PCI_GROUPS) {
    const bus = (offset: number): string => (parseInt(g.rc, 16) + offset).toString(16).padStart(2, '0');
    // Root port, the switch's upstream port, then one downstream port per device.
    const sw = `pci0000:${g.rc}/0000:${g.rc}:01.0/0000:${bus(1)}:00.0`;
    devices.push(`${sw}/0000:${bus(2)}:00.0/0000:${g.gpu}:00.0`);
    const hcaBus = (parseInt(g.gpu, 16) + 1).toString(16);
    devices.push(`${sw}/0000:${bus(2)}:01.0/0000:${hcaBus}:00.0`);
    numa[`pci0000:${g.rc}`] = g.numa;
    hcas[g.hca] = `0000:${hcaBus}:00.0`;
  }
  return { gpus, pci: { devices, numa, hcas } };
}

/**
 * Which demo job's processes hold which stand-in GPU (by minor). 918001 and 918002 hold the GPU
 * beside their HCA (PIX); 918003 shares mlx5_1 (NUMA node 0) from a GPU on NUMA node 1 (SYS), the
 * far pair the locality series make stand out. nvidia3 is held by no process: the GPU a Slurm
 * allocation gives 918004 and it leaves idle (the allocation is the cluster side's, not the tree's).
 */
export const DEMO_GPU_HOLDERS: Readonly<Record<number, number>> = { 918001: 0, 918002: 1, 918003: 2 };
/** The stand-in GPU allocated to 918004 and held by none of its processes. */
export const DEMO_IDLE_GPU = { minor: 3, jobId: 918004 } as const;
/** The GPUs (minors) Slurm gave each demo job on the node: each holder its own, and 918004 the idle one. */
export const DEMO_GPU_ALLOCATION: Readonly<Record<string, readonly number[]>> = {
  ...Object.fromEntries(Object.entries(DEMO_GPU_HOLDERS).map(([job, minor]) => [job, [minor]])),
  [DEMO_IDLE_GPU.jobId]: [DEMO_IDLE_GPU.minor],
};
/**
 * The demo node's gres.conf order of its GPU files (minors): Slurm's GRES index is the place in
 * this list, which need not follow the minors (nvidia3 is IDX:0 here).
 */
export const DEMO_GPU_FILES: readonly number[] = [3, 0, 1, 2];

/** SLUIDs of the demo jobs (26.05 form), used by the v2-sluid layout. */
const SLUIDS = ['sEKNKTV3WPV500', 's5K1KKYAYG5D00', 's0A1B2C3D4E5F6', 's7G8H9J0K1M2N3'];

/** The demo node's jobs; the demo's fake cluster runs the same ids on the same node, so series join on job_id. */
export const DEMO_NODE = 'gpu-001';
export const DEMO_JOBS = [
  { id: 918001, name: 'llm-pretrain', gpus: 2 },
  { id: 918002, name: 'allreduce-bench', gpus: 2 },
  { id: 918003, name: 'moe-finetune', gpus: 2 },
  { id: 918004, name: 'rag-index', gpus: 2 },
] as const;

/**
 * Four jobs: 918001 alone on mlx5_0; 918002 and 918003 share mlx5_1, whose
 * packet_seq_err climbs; 918004 alone on mlx5_2, a RoCE port; mlx5_3 idle or
 * held by a process outside Slurm. uverbs numbers deliberately differ from
 * the HCA numbers.
 */
export function demoTree(opts: DemoOptions): TreeSpec {
  const base = demoTreeWithoutGpus(opts);
  if (opts.gpus !== true) return base;
  const { gpus, pci } = demoPci();
  const nvidia: NvidiaSpec = { gpus };
  const devices = nvidiaDevices(nvidia);
  const jobs = base.jobs.map((j) => {
    const minor = DEMO_GPU_HOLDERS[Number(j.jobId)];
    if (minor === undefined) return j;
    const link: LinkSpec = { target: `/dev/nvidia${minor}`, dev: devices.get(`/dev/nvidia${minor}`) as string };
    const steps = j.steps.map((s) => ({
      ...s,
      tasks: s.tasks.map((t) => ({ ...t, links: [...(t.links ?? []), link] })),
    }));
    return { ...j, steps };
  });
  return { ...base, jobs, nvidia, pci };
}

function demoTreeWithoutGpus(opts: DemoOptions): TreeSpec {
  const hcas: HcaSpec[] = [
    { name: 'mlx5_0', uverbs: 2, ports: [port('InfiniBand', '400 Gb/sec (4X NDR)')] },
    { name: 'mlx5_1', uverbs: 0, ports: [port('InfiniBand', '400 Gb/sec (4X NDR)')] },
    { name: 'mlx5_2', uverbs: 3, ports: [port('Ethernet', '200 Gb/sec (4X HDR)')] },
    { name: 'mlx5_3', uverbs: 1, ports: [port('InfiniBand', '400 Gb/sec (4X NDR)')] },
  ];
  const jobs: JobSpec[] = [
    job(String(DEMO_JOBS[0].id), SLUIDS[0], 41000, [2], opts.usage === true),
    job(String(DEMO_JOBS[1].id), SLUIDS[1], 42000, [0], opts.usage === true),
    job(String(DEMO_JOBS[2].id), SLUIDS[2], 43000, [0], opts.usage === true),
    job(String(DEMO_JOBS[3].id), SLUIDS[3], 44000, [3], opts.usage === true),
  ];
  const others: ProcSpec[] = [
    { pid: 1, comm: 'systemd', fds: 40 },
    { pid: 900, comm: 'slurmd', fds: 12 },
    { pid: 901, comm: 'slurmstepd', cmdline: 'slurmstepd: [infinity]' },
  ];
  if (opts.nonJobHolder) others.push({ pid: 950, comm: 'weka-client', uverbs: [1], fds: 20 });
  return { layout: opts.layout, hcas, jobs, others };
}

const GIB = 2 ** 30;

/**
 * What each demo job's cgroup says it used: 918001 busy near its memory limit, 918002 a short
 * benchmark, 918003 throttled, 918004 mostly idle with one OOM kill behind it. Each has a cpuset
 * of its own, as with ConstrainCores=yes, so the node gives its CPUs allocated.
 */
const DEMO_USAGE: Readonly<Record<string, JobUsageSpec>> = {
  918001: {
    cpuUserSeconds: 86_400,
    cpuSystemSeconds: 3_100,
    memoryBytes: 61 * GIB,
    memoryPeakBytes: 62 * GIB,
    memoryLimitBytes: 64 * GIB,
    cpus: '0-15',
  },
  918002: {
    cpuUserSeconds: 1_250,
    cpuSystemSeconds: 410,
    memoryBytes: 6 * GIB,
    memoryPeakBytes: 9 * GIB,
    memoryLimitBytes: 32 * GIB,
    cpus: '16-23',
  },
  918003: {
    cpuUserSeconds: 20_500,
    cpuSystemSeconds: 900,
    memoryBytes: 20 * GIB,
    memoryPeakBytes: 24 * GIB,
    memoryLimitBytes: 64 * GIB,
    throttledPeriods: 5_400,
    throttledSeconds: 310,
    cpus: '24-39',
  },
  918004: {
    cpuUserSeconds: 240,
    cpuSystemSeconds: 35,
    memoryBytes: 3 * GIB,
    memoryPeakBytes: 16 * GIB,
    memoryLimitBytes: 16 * GIB,
    oomKills: 1,
    cpus: '40-47',
  },
};

function job(jobId: string, sluid: string | undefined, basePid: number, uverbs: number[], withUsage: boolean): JobSpec {
  const tasks: ProcSpec[] = [0, 1].map((i) => ({ pid: basePid + 10 + i, comm: 'python', uverbs, fds: 64 }));
  const s = sluid === undefined ? {} : { sluid };
  const usage = withUsage ? DEMO_USAGE[jobId] : undefined;
  return {
    jobId,
    ...s,
    uid: 1000,
    steps: [{ name: 'step_0', tasks, stepd: stepd(basePid, jobId, 'step_0') }],
    ...(usage ? { usage } : {}),
  };
}

/** Per-second rates of the demo counters, by HCA; packet_seq_err climbs on the shared mlx5_1. */
const DEMO_RATES: Record<string, Record<string, number>> = {
  mlx5_0: {
    port_xmit_data: 2_500_000_000,
    port_rcv_data: 2_400_000_000,
    port_xmit_packets: 2_400_000,
    port_rcv_packets: 2_300_000,
  },
  mlx5_1: {
    port_xmit_data: 600_000_000,
    port_rcv_data: 580_000_000,
    port_xmit_packets: 600_000,
    port_rcv_packets: 590_000,
    packet_seq_err: 350,
    out_of_sequence: 120,
    local_ack_timeout_err: 4,
  },
  mlx5_2: {
    port_xmit_data: 1_200_000_000,
    port_rcv_data: 1_100_000_000,
    port_xmit_packets: 1_100_000,
    port_rcv_packets: 1_000_000,
    np_cnp_sent: 40,
    rp_cnp_handled: 35,
  },
  mlx5_3: { port_xmit_data: 5_000_000, port_rcv_data: 4_000_000, port_xmit_packets: 5_000, port_rcv_packets: 4_000 },
};

/** Counter state kept by the demo so each tick rewrites exact values. */
export class CounterDrift {
  private readonly values = new Map<string, bigint>();

  constructor(private readonly sysfs: string) {}

  /** Advances every demo counter by `seconds` of traffic and rewrites the files. */
  tick(seconds: number): void {
    for (const [device, rates] of Object.entries(DEMO_RATES)) {
      const pma: Record<string, bigint> = {};
      const hw: Record<string, bigint> = {};
      for (const [name, rate] of Object.entries(rates)) {
        const key = `${device} ${name}`;
        const v = (this.values.get(key) ?? 0n) + BigInt(Math.round(rate * seconds * (0.8 + Math.random() * 0.4)));
        this.values.set(key, v);
        (name in PMA ? pma : hw)[name] = v;
      }
      writeCounters(this.sysfs, device, 1, pma, 'counters');
      writeCounters(this.sysfs, device, 1, hw, 'hw_counters');
    }
  }
}

/** CPU cores each demo job keeps busy (user, system): 918001 near its allocation, 918004 nearly idle. */
const DEMO_CPU_RATES: Readonly<Record<string, readonly [number, number]>> = {
  918001: [30, 1.2],
  918002: [6, 2],
  918003: [14, 0.6],
  918004: [0.1, 0.02],
};

/** Advances the demo jobs' CPU time in their cgroup files, so that CPU use and efficiency move. */
export class UsageDrift {
  private readonly cpu = new Map<string, { user: number; system: number }>();

  constructor(
    private readonly cgroupfs: string,
    private readonly spec: TreeSpec,
  ) {}

  tick(seconds: number): void {
    for (const job of this.spec.jobs) {
      const base = job.usage;
      const [user, system] = DEMO_CPU_RATES[job.jobId] ?? [0, 0];
      if (base === undefined) continue;
      const now = this.cpu.get(job.jobId) ?? { user: base.cpuUserSeconds, system: base.cpuSystemSeconds };
      const next = { user: now.user + user * seconds, system: now.system + system * seconds };
      this.cpu.set(job.jobId, next);
      rewriteJobUsage(this.cgroupfs, this.spec, job, {
        ...base,
        cpuUserSeconds: next.user,
        cpuSystemSeconds: next.system,
      });
    }
  }
}

/**
 * Per-PID QP counters (per second) of the two jobs sharing mlx5_1: each job's own part of the
 * port's requests, retransmissions and bytes. 43011's QPs were created before the counters were
 * on, so it has none: job 918003's coverage is 2 of 4 QPs.
 */
const DEMO_QP_RATES: Record<number, Record<string, number>> = {
  42010: {
    rx_write_requests: 9_000,
    packet_seq_err: 220,
    out_of_sequence: 80,
    local_ack_timeout_err: 3,
    rdma_tx_bytes: 250_000_000,
    rdma_rx_bytes: 240_000_000,
  },
  42011: {
    rx_write_requests: 8_000,
    packet_seq_err: 90,
    out_of_sequence: 30,
    local_ack_timeout_err: 1,
    rdma_tx_bytes: 230_000_000,
    rdma_rx_bytes: 220_000_000,
  },
  43010: {
    rx_write_requests: 3_000,
    packet_seq_err: 40,
    out_of_sequence: 10,
    local_ack_timeout_err: 0,
    rdma_tx_bytes: 100_000_000,
    rdma_rx_bytes: 90_000_000,
  },
};
const DEMO_QPS: Record<number, number[]> = {
  42010: [100, 101, 102],
  42011: [103, 104],
  43010: [200, 201],
  43011: [202, 203],
};

/** The demo's per-PID QP counters on the shared mlx5_1, moved like the port counters and served by a stand-in rdma. */
export class QpDrift {
  private readonly values = new Map<string, number>();

  constructor(private readonly rdma: FakeRdma) {
    rdma.resources(
      Object.entries(DEMO_QPS).flatMap(([pid, qps]) =>
        qps.map((lqpn) => ({ ifname: 'mlx5_1', port: 1, pid: Number(pid), lqpn })),
      ),
    );
  }

  tick(seconds: number): void {
    const list: QpCounterJson[] = Object.entries(DEMO_QP_RATES).map(([pid, rates], i) => {
      const counters: Record<string, number> = {};
      for (const [name, rate] of Object.entries(rates)) {
        const key = `${pid} ${name}`;
        const v = (this.values.get(key) ?? 0) + Math.round(rate * seconds * (0.8 + Math.random() * 0.4));
        this.values.set(key, v);
        counters[name] = v;
      }
      return {
        ifname: 'mlx5_1',
        port: 1,
        cntn: i + 1,
        pid: Number(pid),
        comm: 'python',
        counters,
        lqpn: DEMO_QPS[Number(pid)] ?? [],
      };
    });
    this.rdma.counters(list);
  }
}
