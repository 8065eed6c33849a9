/**
 * Benchmark of the streaming JSON array splitter on a ~100 MB v0.0.44 `/jobs/` body.
 *
 * Prints MB/s of: the splitter alone, the splitter plus JSON.parse of each element, the same two
 * keeping only the members the v0.0.44 job decoder reads (what the cluster agent does), and, as
 * the baseline measured in the same run, JSON.parse of a ~50 MB
 * body in one piece (the most a whole-body reader could do before hitting V8's string limit at
 * ~540 MB). Ratios are against that baseline.
 *
 * Run: npm run build && node dist/bench/json-array-stream.js
 */
import { performance } from 'node:perf_hooks';
import { decodeJob } from '../src/cluster/api/decode/decode-v004x.js';
import { JsonArraySplitter } from '../src/json/splitter.js';
import { sayRuntime } from './stats.js';

const TARGET_BYTES = 100 * 1000 * 1000;
const CHUNK = 64 * 1024;
const RUNS = 3;
const T = 1764000000;

const noVal = (n: number) => ({ set: true, infinite: false, number: n });
const unset = { set: false, infinite: false, number: 0 };

function cores(n: number, allocated: number) {
  return Array.from({ length: n }, (_, i) => ({ index: i, status: [i < allocated ? 'ALLOCATED' : 'UNALLOCATED'] }));
}

function allocation(names: string[], cpus: number) {
  return names.map((name, index) => ({
    index,
    name,
    cpus: { count: cpus, used: 0 },
    memory: { used: 0, allocated: 191356 },
    sockets: [0, 1].map((s) => ({ index: s, cores: cores(4, cpus / 4) })),
  }));
}

/** One realistic v0.0.44 job_info object; ~4–5 KB compact, like a real one with job_resources. */
function makeJob(i: number): unknown {
  const id = 100000 + i;
  const user = `user${i % 97}`;
  const nodes = [`worker-${i % 500}`, `worker-${(i + 1) % 500}`];
  const running = i % 5 !== 0;
  return {
    account: `project-${i % 13}`,
    accrue_time: noVal(T - 600),
    admin_comment: '',
    allocating_node: 'login-0',
    array_job_id: noVal(i % 7 === 0 ? id - 3 : 0),
    array_task_id: i % 7 === 0 ? noVal(3) : unset,
    array_max_tasks: noVal(0),
    array_task_string: '',
    association_id: 2 + (i % 50),
    batch_features: '',
    batch_flag: true,
    batch_host: nodes[0],
    flags: [
      'EXACT_TASK_COUNT_REQUESTED',
      'USING_DEFAULT_ACCOUNT',
      'USING_DEFAULT_PARTITION',
      'USING_DEFAULT_QOS',
      'PARTITION_ASSIGNED',
    ],
    burst_buffer: '',
    burst_buffer_state: '',
    cluster: 'soperator',
    cluster_features: '',
    command: `/home/${user}/train.sh --epoch ${i}`,
    comment: '',
    container: '',
    container_id: '',
    contiguous: false,
    core_spec: 0,
    thread_spec: 32766,
    cores_per_socket: unset,
    billable_tres: noVal(4),
    cpus_per_task: noVal(1),
    cpu_frequency_minimum: unset,
    cpu_frequency_maximum: unset,
    cpu_frequency_governor: unset,
    cpus_per_tres: '',
    cron: '',
    current_working_directory: `/home/${user}`,
    deadline: noVal(0),
    delay_boot: noVal(0),
    dependency: '',
    derived_exit_code: { return_code: noVal(0), signal: { id: unset, name: '' }, status: ['SUCCESS'] },
    eligible_time: noVal(T - 600),
    end_time: noVal(running ? T + 86400 : 0),
    excluded_nodes: '',
    exclusive: [],
    exit_code: { return_code: noVal(0), signal: { id: unset, name: '' }, status: [running ? 'PENDING' : 'SUCCESS'] },
    extra: '',
    failed_node: '',
    features: '',
    federation_origin: '',
    federation_siblings_active: '',
    federation_siblings_viable: '',
    gres_detail: running ? ['gpu:h100:8(IDX:0-7)', 'gpu:h100:8(IDX:0-7)'] : [],
    group_id: 1000 + (i % 97),
    group_name: user,
    het_job_id: noVal(0),
    het_job_id_set: '',
    het_job_offset: noVal(0),
    hold: false,
    job_id: id,
    job_resources: running
      ? {
          select_type: ['CORE'],
          nodes: {
            count: 2,
            select_type: ['ONE_ROW'],
            list: `worker-[${i % 500},${(i + 1) % 500}]`,
            whole: false,
            allocation: allocation(nodes, 8),
          },
          cpus: 16,
          threads_per_core: unset,
        }
      : undefined,
    job_size_str: [],
    job_state: [running ? 'RUNNING' : 'PENDING'],
    last_sched_evaluation: noVal(T - 590),
    licenses: '',
    mail_type: [],
    mail_user: `${user}@example.org`,
    max_cpus: noVal(0),
    max_nodes: noVal(0),
    maximum_switch_wait_time: 0,
    mcs_label: '',
    memory_per_cpu: unset,
    memory_per_node: noVal(191356),
    memory_per_tres: '',
    minimum_cpus_per_node: noVal(1),
    minimum_switches: 0,
    minimum_tmp_disk_per_node: noVal(0),
    name: `train-${i % 1000} "quoted" \\ and é`,
    network: '',
    nice: 0,
    node_count: noVal(2),
    nodes: running ? `worker-[${i % 500},${(i + 1) % 500}]` : '',
    oversubscribe: true,
    partition: 'main',
    power: { flags: [] },
    pre_sus_time: noVal(0),
    preempt_time: noVal(0),
    preemptable_time: noVal(T - 580),
    prefer: '',
    priority: noVal(1 + (i % 1000)),
    profile: ['NOT_SET'],
    qos: 'normal',
    reboot: false,
    requeue: true,
    required_nodes: '',
    resize_time: noVal(0),
    restart_cnt: 0,
    resv_name: '',
    scheduled_nodes: '',
    selinux_context: '',
    shared: [],
    show_flags: ['ALL', 'DETAIL', 'LOCAL'],
    sockets_per_board: 0,
    sockets_per_node: unset,
    standard_error: `/home/${user}/slurm-${id}.out`,
    standard_input: '/dev/null',
    standard_output: `/home/${user}/slurm-${id}.out`,
    start_time: noVal(running ? T - 580 : 0),
    state_description: '',
    state_reason: running ? 'None' : 'Resources',
    submit_time: noVal(T - 600),
    suspend_time: noVal(0),
    system_comment: '',
    tasks: noVal(16),
    tasks_per_board: noVal(0),
    tasks_per_core: { set: false, infinite: true, number: 0 },
    tasks_per_node: noVal(0),
    tasks_per_socket: { set: false, infinite: true, number: 0 },
    tasks_per_tres: noVal(0),
    threads_per_core: unset,
    time_limit: noVal(1440),
    time_minimum: noVal(0),
    tres_alloc_str: running ? 'cpu=16,mem=382712M,node=2,billing=16,gres/gpu=16' : '',
    tres_bind: '',
    tres_freq: '',
    tres_per_job: '',
    tres_per_node: 'gres/gpu:8',
    tres_per_socket: '',
    tres_per_task: '',
    tres_req_str: 'cpu=16,mem=382712M,node=2,billing=16,gres/gpu=16',
    user_id: 1000 + (i % 97),
    user_name: user,
    wckey: '',
  };
}

function buildBody(targetBytes: number): { body: Buffer; jobs: number } {
  const head = Buffer.from(
    '{"meta":{"plugin":{"type":"openapi/slurmctld","name":"Slurm OpenAPI slurmctld","data_parser":"data_parser/v0.0.44"},' +
      '"slurm":{"version":{"major":"25","micro":"7","minor":"11"},"release":"25.11.7","cluster":"soperator"}},"jobs":[',
  );
  const tail = Buffer.from(
    `],"last_backfill":${JSON.stringify(noVal(T))},"last_update":${JSON.stringify(noVal(T))},"warnings":[],"errors":[]}`,
  );
  const parts: Buffer[] = [head];
  let size = head.length + tail.length;
  let n = 0;
  while (size < targetBytes) {
    const part = Buffer.from((n > 0 ? ',' : '') + JSON.stringify(makeJob(n)));
    parts.push(part);
    size += part.length;
    n++;
  }
  parts.push(tail);
  return { body: Buffer.concat(parts, size), jobs: n };
}

function runSplitter(body: Buffer, parse: boolean, keepMembers?: readonly string[]): number {
  let parsed = 0;
  const splitter = new JsonArraySplitter({
    arrayKey: 'jobs',
    maxElementBytes: 16 * 1024 * 1024,
    ...(keepMembers ? { keepMembers } : {}),
    onElement: parse
      ? (b) => {
          if (JSON.parse(b.toString('utf8')) !== null) parsed++;
        }
      : () => {
          parsed++;
        },
  });
  for (let off = 0; off < body.length; off += CHUNK)
    splitter.write(body.subarray(off, Math.min(off + CHUNK, body.length)));
  splitter.end();
  return parsed;
}

function best(runs: number, fn: () => void): number {
  let min = Infinity;
  for (let i = 0; i < runs; i++) {
    const t0 = performance.now();
    fn();
    min = Math.min(min, performance.now() - t0);
  }
  return min;
}

const mbps = (bytes: number, ms: number): number => bytes / 1e6 / (ms / 1000);

function main(): void {
  const { body, jobs } = buildBody(TARGET_BYTES);
  console.log(
    `body: ${(body.length / 1e6).toFixed(1)} MB, ${jobs} jobs, ${(body.length / jobs).toFixed(0)} B/job, ${CHUNK / 1024} KiB chunks`,
  );

  const half = buildBody(TARGET_BYTES / 2).body.toString('utf8');
  runSplitter(body, false); // warm-up
  const splitMs = best(RUNS, () => runSplitter(body, false));
  const splitParseMs = best(RUNS, () => runSplitter(body, true));
  const pickMs = best(RUNS, () => runSplitter(body, false, decodeJob.members));
  const pickParseMs = best(RUNS, () => runSplitter(body, true, decodeJob.members));
  const parseMs = best(RUNS, () => JSON.parse(half));

  const baseline = mbps(Buffer.byteLength(half), parseMs);
  const rows: [string, number][] = [
    ['splitter alone', mbps(body.length, splitMs)],
    ['splitter + JSON.parse per element', mbps(body.length, splitParseMs)],
    [`splitter keeping the ${decodeJob.members.length} job members read`, mbps(body.length, pickMs)],
    ["the same + JSON.parse (the agent's path)", mbps(body.length, pickParseMs)],
    [`JSON.parse of one ${(Buffer.byteLength(half) / 1e6).toFixed(0)} MB string (baseline)`, baseline],
  ];
  for (const [name, rate] of rows) {
    console.log(`${name.padEnd(44)} ${rate.toFixed(0).padStart(6)} MB/s   ${(rate / baseline).toFixed(2)}× baseline`);
  }
}

sayRuntime();
main();
