/**
 * Reading a directory's entries from within it: its path made the working directory, each entry
 * is named by its own name, and the kernel walks that one name instead of the whole path. Two
 * readers do so each cycle:
 * - the fd scan (owners.ts): a link is named by its fd number alone, one name instead of four
 *   (`/proc/<pid>/fd/<n>`), as `find` does with readlinkat. On a real /proc that takes about 14 %
 *   off the readlinks of a cold scan, which are most of it. Between fd directories it works from
 *   within procfs: each process's inode, `stat` and fd listing are named `<pid>`, `<pid>/stat`,
 *   `<pid>/fd`: a `stat` of `<pid>` took 1.5 µs against 1.8 for `/proc/<pid>`, and 1.7 against
 *   2.1–3.1 in a tree four names deep.
 * - the cgroup walk (cgroups.ts), from within each job directory: `step_0/user/task_0/cgroup.procs`
 *   instead of the ten names of its whole path. kernfs, which serves cgroupfs, checks each name of a
 *   path again as a lookup passes it (it revalidates its dentries), so a name costs more there
 *   than on tmpfs: on a real cgroup2 tree of 64 jobs and 1,280 directories the walk took 23–25 ms
 *   instead of 27–29 ms.
 *
 * The working directory is the process's, so it is left changed only while a reader runs straight
 * on: the agent's own is restored before the reader yields, returns or throws, so no other code of
 * the agent ever runs in a directory a reader entered. What could run meanwhile off the event loop
 * (a file read in libuv's thread pool) must name its file by an absolute path: the one file the
 * node agent re-reads so, the OTLP bearer token file, is resolved at start (bearer-file.ts); a
 * child started meanwhile (fd-probe.ts) is given `/`.
 */
import path from 'node:path';

export class WorkingDir {
  /** The agent's working directory; undefined where it cannot be known or left (a worker thread). */
  private home: string | undefined;
  /** The directory entered, while the working directory is not the agent's. */
  private inside: string | undefined = undefined;

  constructor() {
    try {
      this.home = process.cwd();
    } catch {
      this.home = undefined;
    }
  }

  /**
   * Makes `dir` (absolute) the working directory; false, and nothing changed, where it cannot be
   * (a process gone, a directory not readable: the whole paths then say why). Entering the
   * directory already entered changes nothing.
   */
  enter(dir: string): boolean {
    if (this.inside === dir) return true;
    if (this.home === undefined || !path.isAbsolute(dir)) return false;
    try {
      process.chdir(dir);
      this.inside = dir;
      return true;
    } catch {
      return false;
    }
  }

  /** Back to the agent's working directory (or `/`, and no more entering, if it is gone). */
  leave(): void {
    if (this.inside === undefined) return;
    this.inside = undefined;
    try {
      process.chdir(this.home as string);
    } catch {
      this.home = undefined;
      process.chdir('/');
    }
  }
}
