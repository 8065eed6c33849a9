/**
 * The slurmdbd records of the fake cluster in the data_parser wire shapes v0.0.40–v0.0.45
 * (`/slurmdb/vX/jobs`, `/qos`, `/associations`): the per-version shapes come from the SPANS table
 * of slurm-render-v004x.ts, as the slurmctld records' do.
 */
import type { FakeAssociation, FakeJob, FakeQos } from './fake-cluster-types.js';
import { isTerminal, jobCpus, taskRanges } from './fake-cluster-types.js';
import { gpuTypeOf, stdoutPath, tresEntries } from './fake-cluster-derived.js';
import type { TresEntry } from './fake-cluster-derived.js';
import { sluidOf } from './sluid.js';
import { EXIT_OK, exit4x, INFINITE, nv, shaped, UNSET, type Ctx4x, type Obj } from './slurm-render-v004x.js';

function tresList4x(entries: readonly TresEntry[]): Obj[] {
  return entries.map((e) => ({ type: e.type, name: e.name, id: e.id, count: e.count }));
}

function dbTime4x(j: FakeJob, c: Ctx4x): Obj {
  const started = j.startTime > 0;
  const ended = isTerminal(j);
  const zero = { seconds: 0, microseconds: 0 };
  return shaped('dbJobTime', c.minor, {
    elapsed: started ? (ended ? j.endTime : c.view.now) - j.startTime : 0,
    eligible: j.eligibleTime,
    end: ended ? j.endTime : 0,
    planned: started ? nv(j.startTime - j.eligibleTime) : UNSET,
    start: j.startTime,
    submission: j.submitTime,
    suspended: 0,
    system: zero,
    limit: j.timeLimitMin === 'UNLIMITED' ? INFINITE : nv(j.timeLimitMin),
    total: zero,
    user: zero,
  });
}

export function dbJob4x(j: FakeJob, c: Ctx4x): Obj {
  const u = j.user;
  const a = j.array;
  const stdout = stdoutPath(j, false);
  const expanded = stdoutPath(j, true);
  return shaped('dbJob', c.minor, {
    account: u.account,
    comment: { administrator: '', job: '', system: '' },
    allocation_nodes: j.nodeCount,
    array: {
      job_id: a?.jobId ?? 0,
      limits: { max: { running: { tasks: a?.maxRunning ?? 0 } } },
      task_id: a?.taskId !== undefined ? nv(a.taskId) : UNSET,
      task: a?.pendingTasks !== undefined ? taskRanges(a.pendingTasks) : '',
    },
    association: {
      account: u.account,
      cluster: c.view.clusterName,
      partition: j.partition,
      user: u.name,
      id: u.uid - 990,
    },
    block: '',
    cluster: c.view.clusterName,
    constraints: '',
    container: '',
    derived_exit_code: EXIT_OK,
    time: dbTime4x(j, c),
    exit_code: exit4x(j),
    extra: '',
    failed_node: '',
    flags: [j.startTime > 0 ? 'STARTED_ON_SCHEDULE' : 'NONE'],
    group: u.name,
    het: { job_id: 0, job_offset: UNSET },
    job_id: j.id,
    name: j.name,
    licenses: '',
    mcs: { label: '' },
    nodes: j.nodeList === '' ? 'None assigned' : j.nodeList,
    partition: j.partition,
    hold: false,
    priority: nv(j.priority),
    qos: 'normal',
    qosreq: '',
    required: { CPUs: jobCpus(j), memory_per_cpu: UNSET, memory_per_node: nv(j.memPerNodeMiB) },
    kill_request_user: '',
    restart_cnt: j.restartCnt,
    reservation: shaped('dbJobReservation', c.minor, { id: 0, name: '', requested: '' }),
    script: '',
    segment_size: 0,
    stdin_expanded: '/dev/null',
    stdout_expanded: expanded,
    stderr_expanded: expanded,
    stdout: stdout,
    stderr: stdout,
    stdin: '/dev/null',
    sluid: sluidOf(j),
    original_sluid: sluidOf(j),
    exclusive: 'NO',
    oversubscribe: 'NO',
    state: { current: [j.state], reason: j.reason },
    steps: [],
    submit_line: `sbatch ${j.name}.sh`,
    tres: {
      allocated: tresList4x(tresEntries(j, 'allocated', gpuTypeOf(j, c.view))),
      requested: tresList4x(tresEntries(j, 'requested', '')),
    },
    used_gres: '',
    user: u.name,
    wckey: { wckey: '', flags: [] },
    working_directory: `/home/${u.name}`,
  });
}

// ------------------------------------------------------------------ slurmdbd limits

/** A limit sacctmgr set, or INFINITE: what slurmdbd reads back for one never set. */
function limit(n: number | undefined): Obj {
  return n === undefined ? INFINITE : nv(n);
}

const PER_ACCOUNT_AND_USER = Object.freeze({ account: INFINITE, user: INFINITE });

/** A QoS (`/slurmdb/vX/qos/`); GrpSubmitJobs and GrpTRESMins only have a member from v0.0.42. */
export function qos4x(q: FakeQos, c: Ctx4x): Obj {
  return {
    description: q.description,
    flags: q.flags,
    id: q.id,
    limits: {
      grace_time: 0,
      max: {
        active_jobs: { accruing: INFINITE, count: limit(q.grpJobs) },
        jobs: shaped('qosMaxJobs', c.minor, {
          count: limit(q.grpSubmitJobs),
          active_jobs: { per: { account: limit(q.maxJobsPerAccount), user: limit(q.maxJobsPerUser) } },
          per: { account: limit(q.maxSubmitJobsPerAccount), user: limit(q.maxSubmitJobsPerUser) },
        }),
        tres: {
          total: tresList4x(q.grpTres),
          minutes: shaped('qosTresMinutes', c.minor, {
            total: tresList4x(q.grpTresMinutes),
            per: { qos: [], job: tresList4x(q.maxTresMinutesPerJob), account: [], user: [] },
          }),
          per: {
            account: tresList4x(q.maxTresPerAccount),
            job: tresList4x(q.maxTresPerJob),
            node: tresList4x(q.maxTresPerNode),
            user: tresList4x(q.maxTresPerUser),
          },
        },
        wall_clock: { per: { qos: limit(q.grpWallMinutes), job: limit(q.maxWallMinutes) } },
        accruing: { per: PER_ACCOUNT_AND_USER },
      },
      factor: INFINITE,
      min: { priority_threshold: INFINITE, tres: { per: { job: [] } } },
    },
    name: q.name,
    preempt: { list: [], mode: ['DISABLED'], exempt_time: INFINITE },
    priority: nv(q.priority),
    usage_factor: nv(q.usageFactor),
    usage_threshold: INFINITE,
  };
}

/** The association's lineage as slurmdbd 23.11+ writes it (`/account/0-user/partition/`). */
function lineage(a: FakeAssociation): string {
  const account = a.account === 'root' ? '/' : `/${a.account}/`;
  return a.user === '' ? account : `${account}0-${a.user}/${a.partition === '' ? '' : `${a.partition}/`}`;
}

/** An association (`/slurmdb/vX/associations/`); its `id` is an object in v0.0.40, a number after. */
export function association4x(a: FakeAssociation, c: Ctx4x): Obj {
  const cluster = c.view.clusterName;
  return {
    accounting: [],
    account: a.account,
    cluster,
    comment: '',
    default: { qos: a.defaultQos },
    flags: [],
    max: {
      jobs: {
        // As real slurmdbd sends them: `per` holds the group limits (and MaxWall), `active`/`total` the maxima.
        per: {
          count: limit(a.grpJobs),
          accruing: INFINITE,
          submitted: limit(a.grpSubmitJobs),
          wall_clock: limit(a.maxWallMinutes),
        },
        active: limit(a.maxJobs),
        accruing: INFINITE,
        total: limit(a.maxSubmitJobs),
      },
      tres: {
        total: tresList4x(a.grpTres),
        group: { minutes: tresList4x(a.grpTresMinutes), active: [] },
        minutes: { total: [], per: { job: [] } },
        per: { job: tresList4x(a.maxTresPerJob), node: tresList4x(a.maxTresPerNode) },
      },
      per: { account: { wall_clock: INFINITE } },
    },
    id: c.minor === 40 ? { account: a.account, cluster, partition: a.partition, user: a.user, id: a.id } : a.id,
    is_default: a.isDefault,
    lineage: lineage(a),
    min: { priority_threshold: INFINITE },
    parent_account: a.parent,
    partition: a.partition,
    priority: limit(a.priority),
    qos: a.qos,
    shares_raw: a.shares,
    user: a.user,
  };
}
