/**
 * Smoke test of the real-Slurm harness (scripts/real-slurm + ./real-slurm.ts):
 * start a cluster, submit jobs of each kind the cluster agent must report,
 * see them through slurmrestd v0.0.38, drain and resume a node, stop.
 * In CI a machine that cannot run Slurm fails this file (see realSlurmGate).
 */
import { createHmac } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REAL_SLURM_START_TIMEOUT_MS, type RealSlurm, realSlurmGate, startRealSlurm } from './real-slurm.js';
import { waitFor } from './tools.js';

const gate = realSlurmGate();
const API = 'slurm/v0.0.38';

interface RestNode {
  name: string;
  state: string;
  state_flags?: string[];
  reason?: string;
  gres?: string;
  gres_used?: string;
  partitions?: string[];
}
interface RestJob {
  job_id: number;
  name: string;
  job_state: string;
  state_reason: string;
  partition: string;
  nodes: string;
  array_job_id: number;
  array_task_id: number | null;
  gres_detail?: string[];
  tres_per_node?: string;
}

/** An HS256 JWT like `scontrol token` makes (claims sun, iat, exp), signed with the cluster key. */
function signToken(key: Buffer, user: string, lifetimeS = 300): string {
  const b64 = (o: object) => Buffer.from(JSON.stringify(o)).toString('base64url');
  const now = Math.floor(Date.now() / 1000);
  const body = `${b64({ alg: 'HS256', typ: 'JWT' })}.${b64({ sun: user, iat: now, exp: now + lifetimeS })}`;
  return `${body}.${createHmac('sha256', key).update(body).digest('base64url')}`;
}

describe.skipIf(gate.skip)('real Slurm 22.05 on loopback (smoke)', () => {
  let slurm: RealSlurm;

  beforeAll(async () => {
    slurm = await startRealSlurm();
  }, REAL_SLURM_START_TIMEOUT_MS);

  afterAll(async () => {
    await slurm?.stop();
  }, 90_000);

  async function rest<T>(path: string, headers = slurm.restHeaders()): Promise<{ status: number; body: T }> {
    const res = await fetch(`${slurm.restUrl}/${path}`, { headers, signal: AbortSignal.timeout(10_000) });
    const text = await res.text();
    // Errors such as 401 come back as plain text ("Authentication failure").
    const json = (res.headers.get('content-type') ?? '').includes('json');
    return { status: res.status, body: (json ? JSON.parse(text) : { text }) as T };
  }
  const nodes = async () => (await rest<{ nodes: RestNode[] }>(`${API}/nodes`)).body.nodes;
  const jobs = async () => (await rest<{ jobs: RestJob[] }>(`${API}/jobs`)).body.jobs;
  async function sbatch(...args: string[]): Promise<number> {
    const { stdout } = await slurm.run(['sbatch', '--parsable', '-o', '/dev/null', '-e', '/dev/null', ...args]);
    const id = Number.parseInt(stdout.trim().split(';')[0] ?? '', 10);
    expect(id, `sbatch ${args.join(' ')} -> ${stdout}`).toBeGreaterThan(0);
    return id;
  }

  it('authenticates REST calls with the env-file token or a self-signed HS256 token', async () => {
    const ping = await rest<{ pings?: unknown[] }>(`${API}/ping`);
    expect(ping.status).toBe(200);
    // The key is readable by tests: a token we sign ourselves is accepted.
    const own = signToken(readFileSync(slurm.jwtKeyPath), 'root');
    expect((await rest(`${API}/ping`, slurm.restHeaders(own))).status).toBe(200);
    // Slurm 22.05 needs X-SLURM-USER-NAME with the token; the agent must send it.
    expect((await rest(`${API}/ping`, { 'X-SLURM-USER-TOKEN': slurm.token })).status).toBe(401);
  });

  it('lists every node idle, cpu/gpu partitions, fake GPUs on the gpu half', async () => {
    const ns = await nodes();
    expect(ns.map((n) => n.name).sort()).toEqual([...slurm.nodes].sort());
    for (const n of ns) expect(n.state, n.name).toBe('idle');
    expect(ns.find((n) => n.name === slurm.nodes[0])?.partitions).toEqual(['cpu']);
    expect(ns.find((n) => n.name === slurm.nodes[3])?.partitions).toEqual(['gpu']);
    expect(ns.find((n) => n.name === slurm.nodes[2])?.gres).toBe('gpu:tesla:2');
    const sinfo = await slurm.run(['sinfo', '-h', '-o', '%P %D %T']);
    expect(sinfo.stdout).toContain('cpu* 2 idle');
    expect(sinfo.stdout).toContain('gpu 2 idle');
  });

  it('shows running, held, array and GPU jobs in squeue and REST /jobs', async () => {
    const running = await sbatch('-p', 'cpu', '-J', 'smoke-run', '--mem=100', '--wrap', 'sleep 300');
    const held = await sbatch('-p', 'cpu', '-J', 'smoke-held', '--hold', '--mem=100', '--wrap', 'sleep 1');
    const array = await sbatch('-p', 'cpu', '-J', 'smoke-array', '--array=0-3', '--mem=100', '--wrap', 'sleep 300');
    const gpu = await sbatch('-p', 'gpu', '-J', 'smoke-gpu', '--gres=gpu:1', '--mem=100', '--wrap', 'sleep 300');

    // squeue's view first (what an operator sees), then the REST view.
    await waitFor('all non-held jobs RUNNING in squeue', async () => {
      const { stdout } = await slurm.run(['squeue', '-h', '-o', '%i %T %r']);
      const lines = stdout.trim().split('\n');
      const state = (id: string) => lines.find((l) => l.startsWith(`${id} `))?.split(' ')[1];
      const ok =
        state(String(running)) === 'RUNNING' &&
        state(String(gpu)) === 'RUNNING' &&
        [0, 1, 2, 3].every((t) => state(`${array}_${t}`) === 'RUNNING') &&
        lines.some((l) => l === `${held} PENDING JobHeldUser`);
      return ok ? true : undefined;
    });

    const js = await waitFor('jobs in REST', async () => {
      const all = await jobs();
      return all.filter((j) => j.job_state === 'RUNNING').length >= 6 ? all : undefined;
    });
    const byId = (id: number) => js.find((j) => j.job_id === id);
    expect(byId(running)).toMatchObject({ name: 'smoke-run', job_state: 'RUNNING', partition: 'cpu' });
    expect(byId(held)).toMatchObject({ job_state: 'PENDING', state_reason: 'JobHeldUser' });
    const tasks = js.filter((j) => j.array_job_id === array);
    expect(tasks.map((t) => t.array_task_id).sort()).toEqual([0, 1, 2, 3]);
    for (const t of tasks) expect(t.job_state).toBe('RUNNING');
    const g = byId(gpu);
    expect(g).toMatchObject({ job_state: 'RUNNING', partition: 'gpu' });
    expect(g?.gres_detail?.[0]).toMatch(/^gpu:tesla:1\(IDX:\d\)$/);
    const gpuNode = (await nodes()).find((n) => n.name === g?.nodes);
    expect(gpuNode?.gres_used).toMatch(/^gpu:tesla:1\(IDX:\d\)$/);
  });

  it('reflects drain and resume of a busy node', { timeout: 90_000 }, async () => {
    const busy = (await jobs()).find((j) => j.name === 'smoke-run')?.nodes;
    expect(slurm.nodes.slice(0, 2)).toContain(busy);
    await slurm.run(['scontrol', 'update', `nodename=${busy}`, 'state=drain', 'reason=smoke-test drain']);
    const drained = await waitFor('DRAIN flag in REST', async () => {
      const n = (await nodes()).find((x) => x.name === busy);
      return n?.state_flags?.includes('DRAIN') ? n : undefined;
    });
    expect(drained.reason).toBe('smoke-test drain');
    expect(['mixed', 'allocated']).toContain(drained.state); // jobs still run: "draining" in sinfo
    const sinfo = await slurm.run(['sinfo', '-h', '-N', '-n', String(busy), '-o', '%T']);
    expect(sinfo.stdout.trim()).toBe('draining');

    await slurm.run(['scontrol', 'update', `nodename=${busy}`, 'state=resume']);
    await waitFor('DRAIN flag gone', async () => {
      const n = (await nodes()).find((x) => x.name === busy);
      return n && !n.state_flags?.includes('DRAIN') ? n : undefined;
    });
  });

  it('shows a node whose slurmd is stopped as NOT_RESPONDING, and back once restarted', async () => {
    await slurm.slurmd('stop', slurm.nodes[3] as string);
    // ~13 s with the harness's SlurmdTimeout=10 / MessageTimeout=5.
    await waitFor(
      `${slurm.nodes[3]} NOT_RESPONDING`,
      async () => {
        const n = (await nodes()).find((x) => x.name === slurm.nodes[3]);
        return n?.state_flags?.includes('NOT_RESPONDING') ? n : undefined;
      },
      90_000,
    );
    await slurm.slurmd('start', slurm.nodes[3] as string);
    await waitFor(
      `${slurm.nodes[3]} responding again`,
      async () => {
        const n = (await nodes()).find((x) => x.name === slurm.nodes[3]);
        return n && !n.state_flags?.includes('NOT_RESPONDING') && n.state !== 'down' ? n : undefined;
      },
      60_000,
    );
  }, 180_000);

  it('cancels everything and is back to idle', async () => {
    await slurm.run(['scancel', '--user=root']);
    await waitFor(
      'all nodes idle again',
      async () => {
        const ns = await nodes();
        return ns.every((n) => n.state === 'idle' && !n.state_flags?.length) ? ns : undefined;
      },
      60_000,
    );
  }, 90_000);
});
