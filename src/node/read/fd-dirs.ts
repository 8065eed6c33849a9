/**
 * Reading an fd directory's links from within it: its path made the working directory, each link
 * is named by its fd number alone, and the kernel walks one name per link instead of four
 * (`/proc/<pid>/fd/<n>`), as `find` does with readlinkat. On a real /proc that takes about 14 % off
 * the readlinks of a cold scan, which are most of it.
 *
 * The working directory is the process's, so it is left changed only while a scan runs straight
 * on: the agent's own is restored before the scan yields, returns or throws, so no other code of
 * the agent ever runs in a job's fd directory. What could run meanwhile off the event loop (a file
 * read in libuv's thread pool) must name its file by an absolute path: the one file the node agent
 * re-reads so, the OTLP bearer token file, is resolved at start (bearer-file.ts); a child started
 * meanwhile (fd-probe.ts) is given `/`.
 */
import path from 'node:path';

export class FdDirs {
  /** The agent's working directory; undefined where it cannot be known or left (a worker thread). */
  private home: string | undefined;
  private inside = false;

  constructor() {
    try {
      this.home = process.cwd();
    } catch {
      this.home = undefined;
    }
  }

  /**
   * Makes `dir` (absolute) the working directory; false, and nothing changed, where it cannot be
   * (a process gone, a directory not readable: the whole paths then say why).
   */
  enter(dir: string): boolean {
    if (this.home === undefined || !path.isAbsolute(dir)) return false;
    try {
      process.chdir(dir);
      this.inside = true;
      return true;
    } catch {
      return false;
    }
  }

  /** Back to the agent's working directory (or `/`, and no more entering, if it is gone). */
  leave(): void {
    if (!this.inside) return;
    this.inside = false;
    try {
      process.chdir(this.home as string);
    } catch {
      this.home = undefined;
      process.chdir('/');
    }
  }
}
