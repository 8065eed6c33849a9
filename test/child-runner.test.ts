/**
 * The helper runner is bounded whatever the command does: a grandchild that leaves the process
 * group (setsid) and keeps the run's stdout open neither wedges the run nor outlives it.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { ChildRunner, killEveryRun, RunError } from '../src/child-runner.js';
import { capturingLogger } from './support/log.js';
import { DAEMONIZE, DAEMONIZE_TWICE, StandIns } from './support/stopping.js';
import { tmpDir } from './support/tmp.js';
import { waitFor } from './support/tools.js';

const made: StandIns[] = [];
afterEach(() => {
  for (const s of made.splice(0)) s.killAll();
});

function standIns(): StandIns {
  const s = new StandIns(tmpDir());
  made.push(s);
  return s;
}

async function gone(s: StandIns): Promise<void> {
  expect(s.pids().length).toBeGreaterThanOrEqual(2);
  await waitFor('no process of the run left', () => (s.survivors().length === 0 ? true : undefined), 5_000);
}

async function failure(p: Promise<unknown>): Promise<RunError> {
  try {
    await p;
  } catch (err) {
    return err as RunError;
  }
  throw new Error('the run succeeded');
}

describe('ChildRunner', () => {
  it('a command that daemonizes and exits gives its output; what it left holding stdout is killed', async () => {
    const s = standIns();
    const cmd = s.script('helper', `${DAEMONIZE}\necho reading`);
    const { logger, lines } = capturingLogger();
    const runner = new ChildRunner('helper', { timeoutMs: 60_000, maxOutput: 1000 }, { logger });
    expect(await runner.run(cmd, [])).toBe('reading\n');
    await gone(s);
    const killed = lines.find((l) => /left processes holding its output/.test(l.msg));
    expect(killed?.processes).toEqual([`${s.pids()[1]} (sleep)`]);
  });

  it('a command whose daemon forked twice and closed its output is found by the run marker and killed', async () => {
    const s = standIns();
    const cmd = s.script('helper', `${DAEMONIZE_TWICE}\necho reading`);
    const { logger, lines } = capturingLogger();
    const runner = new ChildRunner('helper', { timeoutMs: 60_000, maxOutput: 1000 }, { logger, env: process.env });
    expect(await runner.run(cmd, [])).toBe('reading\n');
    expect(s.pids()).toHaveLength(3);
    await gone(s);
    const killed = lines.find((l) => /left processes holding its output/.test(l.msg));
    expect(killed?.processes).toContainEqual(`${s.pids()[2]} (sleep)`);
  });

  it('a command that daemonizes and hangs is cut at its timeout, grandchild included', async () => {
    const s = standIns();
    const cmd = s.script('helper', `${DAEMONIZE}\nexec sleep 600`);
    const runner = new ChildRunner('helper', { timeoutMs: 500, maxOutput: 1000 });
    const err = await failure(runner.run(cmd, []));
    expect(err.kind).toBe('timeout');
    expect(err.message).toBe('helper timed out after 500 ms');
    await gone(s);
  });

  it('stop() ends a run in flight at once, logs it and refuses new runs', async () => {
    const s = standIns();
    const cmd = s.script('helper', `${DAEMONIZE}\nexec sleep 600`);
    const { logger, lines } = capturingLogger();
    const runner = new ChildRunner('helper', { timeoutMs: 600_000, maxOutput: 1000 }, { logger });
    const run = failure(runner.run(cmd, ['--flag']));
    await waitFor('the grandchild started', () => (s.pids().length >= 2 ? true : undefined));
    runner.stop();
    expect((await run).kind).toBe('stopped');
    expect(lines.find((l) => /cut short by the stop/.test(l.msg))?.commands).toEqual([`${cmd} --flag`]);
    expect((await failure(runner.run(cmd, []))).kind).toBe('stopped');
    await gone(s);
  });

  it('killEveryRun() kills the runs of every runner (a second signal)', async () => {
    const s = standIns();
    const cmd = s.script('helper', `${DAEMONIZE}\nexec sleep 600`);
    const runs = [1, 2].map(() =>
      failure(new ChildRunner('helper', { timeoutMs: 600_000, maxOutput: 1000 }).run(cmd, [])),
    );
    await waitFor('both grandchildren started', () => (s.pids().length >= 4 ? true : undefined));
    killEveryRun();
    await gone(s);
    // The runs end with their command (killed), once nothing holds their pipes.
    for (const r of await Promise.all(runs)) expect(r.kind).toBe('exit');
  });

  it('a command that cannot start fails with its code', async () => {
    const err = await failure(new ChildRunner('helper', { timeoutMs: 1000, maxOutput: 10 }).run('/nonexistent', []));
    expect(err.kind).toBe('start');
    expect(err.detail.code).toBe('ENOENT');
  });

  it('runStreaming() hands stdout over in pieces as it comes, under the same cap', async () => {
    const runner = new ChildRunner('helper', { timeoutMs: 60_000, maxOutput: 1 << 20 });
    const seen: Buffer[] = [];
    await runner.runStreaming('/bin/sh', ['-c', "head -c 300000 /dev/zero | tr '\\0' x"], (c) => seen.push(c));
    expect(seen.length).toBeGreaterThan(1);
    expect(Buffer.concat(seen).toString()).toBe('x'.repeat(300_000));
    const capped = new ChildRunner('helper', { timeoutMs: 60_000, maxOutput: 100_000 });
    let got = 0;
    const err = await failure(
      capped.runStreaming('/bin/sh', ['-c', 'head -c 300000 /dev/zero'], (c) => {
        got += c.length;
      }),
    );
    expect(err.kind).toBe('too_large');
    expect(got).toBeLessThanOrEqual(100_000);
  });

  it('runStreaming() cuts the run when its consumer throws, grandchild included', async () => {
    const s = standIns();
    const cmd = s.script('helper', `${DAEMONIZE}\necho reading\nexec sleep 600`);
    const runner = new ChildRunner('helper', { timeoutMs: 600_000, maxOutput: 1000 });
    const err = await failure(
      runner.runStreaming(cmd, [], () => {
        throw new Error('no room');
      }),
    );
    expect(err.kind).toBe('consumer');
    expect(err.message).toBe('helper output could not be read: no room');
    await gone(s);
  });
});
