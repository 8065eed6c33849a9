/**
 * External tools the integration tests need. Under CI a missing tool fails
 * the run; elsewhere the test is skipped with a message naming the package.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import net from 'node:net';

export interface Tool {
  readonly name: string;
  readonly path: string | undefined;
  readonly debianPackage: string;
}

export function findTool(name: string, debianPackage: string): Tool {
  let path: string | undefined;
  try {
    path = execFileSync('sh', ['-c', `command -v ${name}`], { encoding: 'utf8' }).trim() || undefined;
  } catch {
    path = undefined;
  }
  if (!path && !process.env.CI) {
    process.stderr.write(
      `\n!!! SKIPPING tests that need ${name}: install it with 'apt-get install -y ${debianPackage}' !!!\n\n`,
    );
  }
  return { name, path, debianPackage };
}

/** Whether tests needing the tool should run: always under CI (they then fail if it is missing). */
export function shouldRun(tool: Tool): boolean {
  return tool.path !== undefined || Boolean(process.env.CI);
}

export function toolPath(tool: Tool): string {
  if (!tool.path)
    throw new Error(
      `${tool.name} is not installed (CI is set, so this fails instead of skipping): apt-get install -y ${tool.debianPackage}`,
    );
  return tool.path;
}

/** Ports this test process has already handed out: the kernel may give a port just released to
 * the next listen(0), and two such ports in one config (a Collector's receiver and its health
 * check) then collide when the program binds them. */
const handedOut = new Set<number>();

/** A free loopback port, released before returning and never the same twice in one process. */
export async function freePort(): Promise<number> {
  for (let attempt = 0; attempt < 64; attempt++) {
    const port = await listenAndRelease();
    if (!handedOut.has(port)) {
      handedOut.add(port);
      return port;
    }
  }
  throw new Error('no fresh loopback port in 64 tries');
}

async function listenAndRelease(): Promise<number> {
  const srv = net.createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const port = (srv.address() as net.AddressInfo).port;
  await new Promise<void>((r) => srv.close(() => r()));
  return port;
}

/** Runs a command and gives back its exit code and output. */
export function run(
  cmd: string,
  args: string[],
  input?: string,
  env?: NodeJS.ProcessEnv,
): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { stdio: ['pipe', 'pipe', 'pipe'], ...(env ? { env } : {}) });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code: code ?? -1, stdout, stderr }));
    child.stdin.end(input ?? '');
  });
}

export function stopChild(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    child.once('exit', () => resolve());
    child.kill('SIGTERM');
    setTimeout(() => child.kill('SIGKILL'), 5000).unref();
  });
}

/**
 * The one way tests wait: polls `fn` until it gives a value (anything but undefined or false) or
 * the deadline passes; a throw counts as "not yet" and the last one is in the error. The deadline
 * is generous on purpose: a loaded machine may be slow, and nothing here ever asserts how long a
 * wait took. Polls start fast (10 ms) and back off to 250 ms.
 */
export async function waitFor<T>(
  what: string,
  fn: () => T | undefined | Promise<T | undefined>,
  timeoutMs = 30_000,
): Promise<Exclude<T, false | undefined>> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (let pause = 10; ; pause = Math.min(250, pause * 2)) {
    try {
      const v = await fn();
      if (v !== undefined && v !== false) return v as Exclude<T, false | undefined>;
    } catch (e) {
      last = e;
    }
    if (Date.now() > deadline)
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${last ? `: ${String(last)}` : ''}`);
    await new Promise((r) => setTimeout(r, pause));
  }
}
