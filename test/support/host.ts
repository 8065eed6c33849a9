/** Facts about the host the tests run on. */
import fs from 'node:fs';
import path from 'node:path';

export const HOST_CGROUP = '/sys/fs/cgroup';

/** Slurm cgroup trees on this host: v1 `<controller>/slurm*`, or a v2 stepd scope in system.slice. */
export function slurmTreesOnHost(): string[] {
  const out: string[] = [];
  if (!fs.existsSync(HOST_CGROUP)) return out;
  for (const dir of [...fs.readdirSync(HOST_CGROUP), 'system.slice', 'unified/system.slice']) {
    try {
      for (const name of fs.readdirSync(path.join(HOST_CGROUP, dir)))
        if (/^slurm|slurmstepd\.scope$/.test(name)) out.push(`${dir}/${name}`);
    } catch {
      // a file, or absent: nothing of Slurm's there
    }
  }
  return out;
}
