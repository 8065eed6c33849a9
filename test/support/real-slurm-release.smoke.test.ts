/**
 * Smoke test of the chroot harness for newer releases (scripts/real-slurm/chroot.sh, db.sh and
 * the release option of ./real-slurm.ts): each release starts with slurmdbd (host MariaDB),
 * serves exactly its data parsers, runs Slurm clients inside its chroot, and 26.05's slurmctld
 * serves its own /metrics/*; a release that predates cgroup.conf's CgroupJobIdPaths (26.05.2) is
 * refused it by name. In CI a machine that cannot have the chroot fails this file.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  REAL_SLURM_START_TIMEOUT_MS,
  type RealSlurm,
  realSlurmGate,
  SLURM_RELEASES,
  type SlurmRelease,
  startRealSlurm,
} from './real-slurm.js';

const RELEASES: SlurmRelease[] = ['24.11', '26.05'];

/** A data parser one below and one above what the release serves (must be 404). */
function neighbours(parsers: readonly string[]): string[] {
  const minor = (v: string) => Number.parseInt(v.split('.')[2] ?? '', 10);
  const lo = minor(parsers[0] ?? '');
  const hi = minor(parsers[parsers.length - 1] ?? '');
  return [`v0.0.${lo - 1}`, `v0.0.${hi + 1}`];
}

const gates = Object.fromEntries(RELEASES.map((r) => [r, realSlurmGate(r)])) as Record<SlurmRelease, { skip: boolean }>;

for (const release of RELEASES) {
  describe.skipIf(gates[release].skip)(`real Slurm ${release} in its chroot (smoke)`, () => {
    let slurm: RealSlurm;

    beforeAll(async () => {
      slurm = await startRealSlurm({ release, dbd: true, instance: `r${release.slice(0, 2)}` });
    }, REAL_SLURM_START_TIMEOUT_MS);

    afterAll(async () => {
      await slurm?.stop();
      // Its host MariaDB's state dir (db.sh) goes with the cluster's, logs and all: a run's alone.
      if (slurm && process.env.REAL_SLURM_KEEP !== '1') expect(fs.existsSync(`${slurm.stateDir}-db`)).toBe(false);
    }, 120_000);

    const status = async (path: string) =>
      (await fetch(`${slurm.restUrl}/${path}`, { headers: slurm.restHeaders(), signal: AbortSignal.timeout(10_000) }))
        .status;

    it('is the release asked for, served by its own clients inside the chroot', async () => {
      expect(slurm.release).toBe(release);
      expect(slurm.version.startsWith(`${release}.`), slurm.version).toBe(true);
      expect(slurm.chrootDir).toBeDefined();
      const { stdout } = await slurm.run(['sinfo', '--version']);
      // "slurm-wlm 26.05.5": the chroot's client, not the host's 22.05 one.
      expect(stdout.trim().split(' ').pop()).toBe(slurm.version);
      const nodes = await slurm.run(['sinfo', '-h', '-N', '-o', '%N %T']);
      expect(nodes.stdout.trim().split('\n').sort()).toEqual(slurm.nodes.map((n) => `${n} idle`).sort());
    });

    it('serves exactly its data parsers, for slurmctld and slurmdbd', async () => {
      expect(slurm.dataParsers).toEqual(SLURM_RELEASES[release].dataParsers);
      for (const v of slurm.dataParsers) {
        expect(await status(`slurm/${v}/nodes`), `slurm/${v}/nodes`).toBe(200);
        expect(await status(`slurmdb/${v}/qos`), `slurmdb/${v}/qos`).toBe(200);
      }
      for (const v of neighbours(slurm.dataParsers)) expect(await status(`slurm/${v}/nodes`), v).toBe(404);
    });

    it('runs a batch job submitted from the chroot and sees it in accounting', async () => {
      const sub = await slurm.run(['sbatch', '--parsable', '--wrap', 'true']);
      const id = Number.parseInt(sub.stdout.trim(), 10);
      expect(id).toBeGreaterThan(0);
      const acct = await slurm.run(['sacctmgr', '-n', '-P', 'list', 'cluster', 'format=cluster']);
      expect(acct.stdout.trim().length).toBeGreaterThan(0);
    });

    it.runIf(release === '26.05')("serves slurmctld's own /metrics/nodes on its port", async () => {
      const res = await fetch(`http://127.0.0.1:${slurm.ctldPort}/metrics/nodes`, {
        signal: AbortSignal.timeout(10_000),
      });
      expect(res.status).toBe(200);
      const text = await res.text();
      for (const n of slurm.nodes) expect(text).toContain(`slurm_node_cpus{node="${n}"} 4`);
    });
  });
}

describe.skipIf(gates['24.11'].skip)('CgroupJobIdPaths on a Slurm before 26.05.2 (24.11)', () => {
  // Unchecked, 24.11's slurmctld (and slurmd) would stop at "Parsing error at unrecognized key:
  // CgroupJobIdPaths"; up.sh says why before it starts anything.
  it('up.sh refuses REAL_SLURM_CGROUP_JOBID_PATHS, naming the version, before it starts a daemon', async () => {
    const stateDir = fs.mkdtempSync('/tmp/slurm-otel-jobid-paths-');
    try {
      await expect(
        startRealSlurm({
          release: '24.11',
          cgroup: 'v2',
          nodes: 2,
          instance: 'jp',
          stateDir,
          env: { REAL_SLURM_CGROUP_JOBID_PATHS: 'yes' },
        }),
      ).rejects.toThrow(/CgroupJobIdPaths is known from Slurm 26\.05\.2 on; this slurmd is 24\.11\.\d+/);
      expect(fs.readdirSync(path.join(stateDir, 'log')).filter((f) => f.endsWith('.out'))).toEqual([]);
    } finally {
      fs.rmSync(stateDir, { recursive: true, force: true });
    }
  });
});
