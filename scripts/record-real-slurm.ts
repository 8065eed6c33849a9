/**
 * Records what real slurmrestd 24.11 and 26.05 answer, for every data parser each serves, into
 * fixtures/slurm/recorded/slurm-<release>/<version>/ (bodies byte for byte as received), with the
 * sinfo/squeue/sdiag text taken at the same moment in cli.txt. The cluster is the tests' own
 * (test/support/real-slurm.ts, in the release's chroot, with slurmdbd) and the scenario is fixed:
 * running, held, begin-time, array, GPU, licensed, completed and failed jobs, a drained node, a
 * maintenance reservation, QoS and association limits. Needs root.
 *
 *   npm run fixtures:real [-- 24.11 26.05]
 *
 * test/demo/fake-vs-recorded.test.ts compares the fake slurmrestd's shapes with these files.
 */
import fs from 'node:fs';
import path from 'node:path';
import { SLURM_RELEASES, type RealSlurm, type SlurmRelease, startRealSlurm } from '../test/support/real-slurm.js';
import { waitFor } from '../test/support/tools.js';

const OUT = path.join('fixtures', 'slurm', 'recorded');
const SLURM_ENDPOINTS = ['ping', 'nodes', 'jobs', 'diag', 'partitions', 'licenses', 'reservations', 'shares'] as const;
const SLURMDB_ENDPOINTS = ['jobs', 'qos', 'associations'] as const;

async function get(slurm: RealSlurm, p: string): Promise<{ status: number; text: string }> {
  const res = await fetch(`${slurm.restUrl}/${p}`, {
    headers: slurm.restHeaders(),
    signal: AbortSignal.timeout(30_000),
  });
  return { status: res.status, text: await res.text() };
}

async function sbatch(slurm: RealSlurm, ...args: string[]): Promise<string> {
  const out = await slurm.run(['sbatch', '--parsable', '-o', '/dev/null', '-e', '/dev/null', '--mem=100', ...args]);
  return out.stdout.trim().split(';')[0] as string;
}

async function scenario(slurm: RealSlurm): Promise<Record<string, string>> {
  const jobs: Record<string, string> = {};
  jobs.completed = await sbatch(slurm, '-p', 'cpu', '-J', 'otel-done', '--wrap', 'true');
  jobs.failed = await sbatch(slurm, '-p', 'cpu', '-J', 'otel-fail', '--wrap', 'exit 3');
  jobs.running = await sbatch(slurm, '-p', 'cpu', '-J', 'otel-run', '--wrap', 'sleep 600');
  jobs.held = await sbatch(slurm, '-p', 'cpu', '-J', 'otel-held', '--hold', '--wrap', 'sleep 1');
  jobs.begin = await sbatch(slurm, '-p', 'cpu', '-J', 'otel-later', '--begin=now+3600', '--wrap', 'sleep 1');
  jobs.array = await sbatch(slurm, '-p', 'cpu', '-J', 'otel-array', '--array=0-3', '--wrap', 'sleep 600');
  jobs.gpu = await sbatch(slurm, '-p', 'gpu', '-J', 'otel-gpu', '--gres=gpu:1', '--wrap', 'sleep 600');
  jobs.licensed = await sbatch(slurm, '-p', 'cpu', '-J', 'otel-lic', '-L', 'fluent:2', '--wrap', 'sleep 600');
  await waitFor('the jobs running, completed and failed', async () => {
    const out = (await slurm.run(['squeue', '-h', '-t', 'all', '-o', '%T'])).stdout.split('\n');
    const n = (s: string) => out.filter((l) => l === s).length;
    return n('RUNNING') === 7 && n('COMPLETED') === 1 && n('FAILED') === 1 ? true : undefined;
  });
  const last = slurm.nodes[slurm.nodes.length - 1] as string;
  await slurm.run(
    ['scontrol', 'create', 'reservation', 'reservationname=otel-maint', 'starttime=now+3600'].concat([
      'duration=60',
      `nodes=${last}`,
      'users=root',
      'flags=maint',
    ]),
  );
  await slurm.run(['scontrol', 'update', `nodename=${last}`, 'state=drain', 'reason=otel-drain']);
  await slurm.run([
    'sacctmgr',
    '-i',
    'modify',
    'qos',
    'normal',
    'set',
    'MaxJobsPerUser=10',
    'GrpTRES=cpu=64',
    'GrpJobs=11',
    'GrpSubmitJobs=12',
    'MaxWall=17',
  ]);
  await slurm.run(['sacctmgr', '-i', 'modify', 'account', 'root', 'set', 'GrpJobs=50', 'MaxJobs=20', 'MaxWall=60']);
  return jobs;
}

async function cliText(slurm: RealSlurm): Promise<string> {
  const parts: string[] = [];
  for (const cmd of [
    ['sinfo', '-N', '-o', '%N|%T|%C|%m|%P|%E'],
    ['squeue', '-t', 'all', '-o', '%A|%F|%K|%T|%P|%j|%u|%C|%N|%r'],
    ['sdiag'],
    ['scontrol', '-o', 'show', 'licenses'],
    ['scontrol', '-o', 'show', 'reservation'],
    ['sshare', '-a', '-P'],
    ['sacctmgr', '-nP', 'show', 'qos', 'format=Name,Priority,GrpJobs,GrpSubmit,MaxJobsPU,MaxWall,GrpTRES'],
    ['sacctmgr', '-nP', 'show', 'assoc', 'format=Account,User,GrpJobs,MaxJobs,MaxWall'],
  ]) {
    parts.push(`$ ${cmd.join(' ')}\n${(await slurm.run(cmd)).stdout}`);
  }
  return parts.join('\n');
}

async function record(release: SlurmRelease): Promise<void> {
  const slurm = await startRealSlurm({
    release,
    dbd: true,
    instance: `rec${release.slice(0, 2)}`,
    env: { REAL_SLURM_EXTRA_CONF: 'ReturnToService=1\nLicenses=fluent:8' },
  });
  try {
    const jobs = await scenario(slurm);
    await waitFor('slurmdbd to know the finished jobs', async () => {
      const r = await get(slurm, `slurmdb/${slurm.dataParsers[0]}/jobs`);
      return r.text.includes('"otel-fail"') && r.text.includes('"otel-run"') ? true : undefined;
    });
    const dir = path.join(OUT, `slurm-${release}`);
    fs.rmSync(dir, { recursive: true, force: true });
    for (const v of slurm.dataParsers) {
      fs.mkdirSync(path.join(dir, v), { recursive: true });
      const take = async (api: string, name: string, file: string) => {
        const r = await get(slurm, `${api}/${v}/${name}`);
        if (r.status !== 200) throw new Error(`${api}/${v}/${name}: HTTP ${r.status}\n${r.text.slice(0, 500)}`);
        fs.writeFileSync(path.join(dir, v, file), r.text);
      };
      for (const e of SLURM_ENDPOINTS) await take('slurm', e, `${e}.json`);
      for (const e of SLURMDB_ENDPOINTS) await take('slurmdb', e, `slurmdb-${e}.json`);
    }
    fs.writeFileSync(path.join(dir, 'cli.txt'), await cliText(slurm));
    const ids = Object.entries(jobs).map(([k, id]) => `${k} ${id}`);
    fs.writeFileSync(path.join(dir, 'job-ids.txt'), `slurm ${slurm.version}\n${ids.join('\n')}\n`);
    console.log(`${dir}: Slurm ${slurm.version}, ${slurm.dataParsers.join(' ')}`);
  } finally {
    await slurm.stop();
  }
}

const asked = process.argv.slice(2);
const releases = (asked.length ? asked : ['24.11', '26.05']).filter((r): r is SlurmRelease => r in SLURM_RELEASES);
for (const r of releases) await record(r);
