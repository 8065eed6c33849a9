/**
 * Real processes for the benches on the real kernel: `sleep`s holding as many fds as a job process
 * does, started from this process with the fds it hands them (`stdio`), so /proc lists them as it
 * lists a node's processes.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import net from 'node:net';

/** The fd of a listening socket on loopback: what most of a job process's fds are (`socket:[…]`). */
export async function socketFd(): Promise<{ fd: number; close: () => void }> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  // The handle's descriptor is not public API; a bench may lean on it to hand the socket on.
  const fd = (server as unknown as { _handle: { fd: number } })._handle.fd;
  return { fd, close: () => server.close() };
}

/**
 * `count` sleepers, each given `fds(i)` as its fds 0 to N-1, started (spawned, not exited). Each is
 * put into `all` as soon as it is spawned, so that whoever stops them finds every one, also when a
 * later one failed to start.
 */
export async function startSleepers(
  count: number,
  fds: (i: number) => number[],
  all: ChildProcess[] = [],
): Promise<ChildProcess[]> {
  const out: ChildProcess[] = [];
  for (let i = 0; i < count; i++) {
    const child = spawn('sleep', ['3600'], { stdio: fds(i) });
    out.push(child);
    all.push(child);
  }
  await Promise.all(out.map((c) => new Promise((resolve, reject) => c.once('spawn', resolve).once('error', reject))));
  return out;
}

/** Kills the sleepers and waits until each has exited (a cgroup holding one cannot be removed). */
export async function stopSleepers(children: readonly ChildProcess[]): Promise<void> {
  await Promise.all(
    children.map(
      (c) =>
        new Promise<void>((resolve) => {
          if (c.exitCode !== null || c.signalCode !== null) return resolve();
          c.once('exit', () => resolve());
          c.kill('SIGKILL');
        }),
    ),
  );
}
