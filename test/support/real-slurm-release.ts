/**
 * Which real Slurm a test cluster runs, and how its commands are started.
 *
 * 22.05 is Debian 12's own packages on the host. 24.11 (trixie) and 26.05 (sid) come from
 * Debian's archive into a chroot made once by scripts/real-slurm/chroot.sh and cached outside
 * the clone (`SLURM_OTEL_CHROOT_CACHE`, default /var/cache/slurm-otel/<suite>); the same
 * scripts (up.sh, down.sh, slurmd.sh) then run inside it, and every Slurm client command too,
 * since a 22.05 client cannot talk to a newer slurmctld. State dirs live in /tmp, which the
 * chroot shares with the host, so the env file, logs and JWT key are read from here unchanged.
 * slurmdbd of the newer releases uses a MariaDB on the host (db.sh): 26.05's slurmdbd stops at
 * start with sid's MariaDB 11.8.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';

export type SlurmRelease = '22.05' | '24.11' | '26.05';

export interface ReleaseInfo {
  release: SlurmRelease;
  /** Debian suite of the chroot; undefined = the host's own packages (22.05). */
  suite?: 'trixie' | 'sid';
  /** Data parsers (API versions) this release's slurmrestd serves, oldest first. */
  dataParsers: readonly string[];
  /** slurmrestd -s list, without and with slurmdbd; undefined = up.sh's 22.05 default. */
  restPlugins?: { plain: string; dbd: string };
  /** slurm.conf lines this project always wants on this release. */
  extraConf?: string;
}

export const SLURM_RELEASES: Readonly<Record<SlurmRelease, ReleaseInfo>> = {
  '22.05': { release: '22.05', dataParsers: ['v0.0.36', 'v0.0.37', 'v0.0.38'] },
  '24.11': {
    release: '24.11',
    suite: 'trixie',
    dataParsers: ['v0.0.40', 'v0.0.41', 'v0.0.42'],
    // 24.11 has no openapi/util.
    restPlugins: { plain: 'openapi/slurmctld', dbd: 'openapi/slurmctld,openapi/slurmdbd' },
  },
  '26.05': {
    release: '26.05',
    suite: 'sid',
    dataParsers: ['v0.0.42', 'v0.0.43', 'v0.0.44', 'v0.0.45'],
    restPlugins: {
      plain: 'openapi/slurmctld,openapi/util',
      dbd: 'openapi/slurmctld,openapi/slurmdbd,openapi/util',
    },
    // slurmctld's own /metrics/{nodes,jobs,partitions,scheduler,jobs-users-accts} on its port.
    extraConf: 'MetricsType=metrics/openmetrics',
  },
};

/** Where chroot.sh keeps (or makes) the chroot of a suite. */
export function chrootCacheDir(suite: string, cacheRoot = process.env.SLURM_OTEL_CHROOT_CACHE): string {
  return join(cacheRoot ?? '/var/cache/slurm-otel', suite);
}

/** The same test chroot.sh makes: a chroot holding these binaries is complete and reused. */
export function chrootComplete(root: string): boolean {
  return ['slurmctld', 'slurmdbd', 'slurmrestd'].every((b) => existsSync(join(root, 'usr', 'sbin', b)));
}

/** Why a newer release cannot run here, or undefined when it can (cheap, synchronous). */
export function chrootUnavailable(info: ReleaseInfo): string | undefined {
  if (info.suite === undefined) return undefined;
  if (!existsSync('/usr/sbin/chroot')) return '/usr/sbin/chroot is missing';
  if (!existsSync('/usr/sbin/mariadbd')) return 'mariadbd is missing on the host (slurmdbd of the chroot uses it)';
  const root = chrootCacheDir(info.suite);
  if (chrootComplete(root)) return undefined;
  if (existsSync('/usr/sbin/debootstrap') || existsSync('/usr/bin/apt-get')) return undefined; // chroot.sh makes it
  return `no chroot at ${root} and no debootstrap to make it (apt-get install debootstrap)`;
}

/** Where the scripts of scripts/real-slurm are, as the process running them sees them. */
export const CHROOT_SCRIPTS = '/opt/slurm-otel/real-slurm';

/** How the scripts and clients of one cluster are started: on the host, or inside its chroot. */
export interface CommandLayer {
  /** e.g. ['/bin/bash', ['<dir>/up.sh']] or ['/usr/sbin/chroot', [root, '/bin/bash', '/opt/…/up.sh']]. */
  script(name: string, args?: string[]): [string, string[]];
  /** A Slurm client run with `cwd` as its working directory. */
  client(cmd: readonly string[], cwd: string): { file: string; args: string[]; cwd?: string };
}

export function hostLayer(scriptsDir: string): CommandLayer {
  return {
    script: (name, args = []) => ['/bin/bash', [join(scriptsDir, name), ...args]],
    client: ([file, ...args], cwd) => {
      if (!file) throw new Error('run: empty command');
      return { file, args, cwd };
    },
  };
}

export function chrootLayer(root: string): CommandLayer {
  return {
    script: (name, args = []) => ['/usr/sbin/chroot', [root, '/bin/bash', join(CHROOT_SCRIPTS, name), ...args]],
    // chroot(8) changes to / inside; the cd restores the caller's cwd (the state dir is in /tmp,
    // the same path on both sides), so sbatch jobs still write slurm-<id>.out there.
    client: (cmd, cwd) => {
      if (cmd.length === 0) throw new Error('run: empty command');
      return { file: '/usr/sbin/chroot', args: [root, '/bin/sh', '-c', 'cd "$0" && exec "$@"', cwd, ...cmd] };
    },
  };
}

/** REAL_SLURM_* knobs up.sh needs for this release (the caller's own env wins). */
export function releaseScriptEnv(info: ReleaseInfo, dbd: boolean, dbPort: number): Record<string, string> {
  if (info.suite === undefined) return {};
  const plugins = info.restPlugins;
  return {
    // Nothing to apt-get inside the chroot: chroot.sh installed its packages.
    REAL_SLURM_INSTALL: '0',
    REAL_SLURM_PING_VERSION: info.dataParsers[info.dataParsers.length - 1] ?? 'v0.0.42',
    ...(plugins ? { REAL_SLURM_REST_PLUGINS: dbd ? plugins.dbd : plugins.plain } : {}),
    ...(info.extraConf ? { REAL_SLURM_EXTRA_CONF: info.extraConf } : {}),
    ...(dbd ? { REAL_SLURM_DB_EXTERNAL: String(dbPort) } : {}),
  };
}
