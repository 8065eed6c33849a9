/**
 * SIGTERM (or SIGINT, SIGHUP) ends either agent promptly whatever is in flight, with exit status 0, a log line naming
 * what was cut short, and no helper process left behind; a second signal exits at once. The
 * deadline below is generous for a loaded machine and still far below what each case took before
 * stops were bounded (15 s to never, see bench/stop-time.ts).
 */
import fs from 'node:fs';
import type net from 'node:net';
import path from 'node:path';
import bcrypt from 'bcryptjs';
import { afterEach, describe, expect, it } from 'vitest';
import {
  MANAGED_LINKS,
  otlpHanging,
  otlpRefused,
  rdmaDaemonizing,
  rdmaRestore,
  scontrolHanging,
  scrapesOpen,
  slurmrestdHanging,
  squeueDaemonizing,
  type StopCase,
} from '../support/stop-cases.js';
import { passwordFlood, slowloris } from '../support/http-attacks.js';
import { DAEMONIZE, DAEMONIZE_TWICE, spawnAgent, type AgentChild, type Exit } from '../support/stopping.js';
import { tmpDir } from '../support/tmp.js';
import { waitFor } from '../support/tools.js';

/** Far above the ~2 s a bounded stop takes, far below what the unbounded one took. */
const EXIT_DEADLINE_MS = 10_000;

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

function start(c: StopCase): AgentChild {
  const agent = spawnAgent(c.args);
  cleanups.push(
    () => c.close(),
    () => c.standIns.killAll(),
    () => stopOrKill(agent),
  );
  return agent;
}

/** A clean stop ends the agent's helpers with it; SIGKILL (a stop that failed) would leave them. */
async function stopOrKill(agent: AgentChild): Promise<void> {
  if (agent.hasExited()) return;
  agent.signal('SIGTERM');
  await Promise.race([agent.exited, new Promise((resolve) => setTimeout(resolve, EXIT_DEADLINE_MS))]);
  agent.signal('SIGKILL');
}

async function exitOf(agent: AgentChild, deadlineMs = EXIT_DEADLINE_MS): Promise<Exit> {
  let exit: Exit | undefined;
  void agent.exited.then((e) => (exit = e));
  return waitFor('the agent to exit', () => exit, deadlineMs);
}

/** Waits until the case's work is in flight, sends SIGTERM and gives how the agent exited. */
async function terminate(c: StopCase, agent: AgentChild): Promise<Exit> {
  await waitFor('work in flight', () => c.inFlight(agent) || undefined);
  agent.signal('SIGTERM');
  return exitOf(agent);
}

/** Nothing the agent started is left (a killed process may take a moment to disappear). */
async function expectNoSurvivors(c: StopCase): Promise<void> {
  expect(c.standIns.pids().length).toBeGreaterThan(0);
  await waitFor('no helper process left', () => (c.standIns.survivors().length === 0 ? true : undefined), 5_000);
}

function expectCleanStop(exit: Exit, agent: AgentChild): void {
  expect(exit.code, agent.output()).toBe(0);
  expect(agent.logged(/^stopped$/)).toBe(true);
  // An ordinary stop cuts work short: said at warn or info, never an error (nor a stack).
  expect(agent.logs().filter((l) => l.level === 'error' || l.level === 'fatal')).toEqual([]);
}

describe('stopping the agents (SIGTERM, SIGINT, SIGHUP)', () => {
  it('node agent: an OTLP endpoint refusing connections gets one last push, cut at its deadline', async () => {
    const c = await otlpRefused(tmpDir());
    const agent = start(c);
    expectCleanStop(await terminate(c, agent), agent);
    expect(agent.logged(/final OTLP push cut short/), agent.output()).toBe(true);
  });

  it('node agent: an OTLP endpoint that never answers is cut short', async () => {
    const c = await otlpHanging(tmpDir());
    const agent = start(c);
    expectCleanStop(await terminate(c, agent), agent);
    expect(agent.logged(/OTLP push (in flight )?cut short/), agent.output()).toBe(true);
  });

  it('cluster agent: a slurmrestd request accepted and never answered is aborted, retries included', async () => {
    const c = await slurmrestdHanging(tmpDir());
    const agent = start(c);
    expectCleanStop(await terminate(c, agent), agent);
    expect(agent.logged(/slurmrestd requests in flight cut short by the stop/), agent.output()).toBe(true);
  });

  it('cluster agent: a hanging scontrol token is killed', async () => {
    const c = await scontrolHanging(tmpDir());
    const agent = start(c);
    expectCleanStop(await terminate(c, agent), agent);
    expect(agent.logged(/cut short by the stop/), agent.output()).toBe(true);
    await expectNoSurvivors(c);
  });

  it('node agent: a squeue that daemonized a grandchild holding its stdout is killed, grandchild too', async () => {
    const c = await squeueDaemonizing(tmpDir());
    const agent = start(c);
    expectCleanStop(await terminate(c, agent), agent);
    expect(agent.logged(/squeue run in flight cut short by the stop/), agent.output()).toBe(true);
    await expectNoSurvivors(c);
  });

  it('node agent: an rdma that daemonized a grandchild holding its stdout leaves nothing behind', async () => {
    const c = await rdmaDaemonizing(tmpDir());
    const agent = start(c);
    expectCleanStop(await terminate(c, agent), agent);
    await expectNoSurvivors(c);
  });

  it('node agent: rdma runs whose daemons forked twice and closed their output leave nothing behind', async () => {
    const c = await rdmaDaemonizing(tmpDir(), 'exit 0', DAEMONIZE_TWICE);
    const agent = start(c);
    // Several runs, each leaving a daemon on the old code.
    await waitFor('three rdma runs', () => (c.standIns.lines('calls.log').length >= 3 ? true : undefined));
    expectCleanStop(await terminate(c, agent), agent);
    await expectNoSurvivors(c);
  });

  it('--qp-counters manage: a hanging restore is bounded, every link is tried and those left on are named', async () => {
    const c = await rdmaRestore(tmpDir(), 'exec sleep 600');
    const agent = start(c);
    expectCleanStop(await terminate(c, agent), agent);
    const off = c.standIns.lines('set.log').filter((l) => l.endsWith(' off'));
    expect(off.map((l) => l.split(' ')[0]).sort()).toEqual(MANAGED_LINKS);
    const left = agent.logs().find((l) => l.msg === 'per-PID QP counters left on where this agent turned them on');
    expect(left?.links, agent.output()).toEqual(MANAGED_LINKS);
    await expectNoSurvivors(c);
  });

  it('--qp-counters manage: a daemonizing restore does not wedge the others; every link is restored', async () => {
    const c = await rdmaRestore(tmpDir(), `${DAEMONIZE}\nexit 0`);
    const agent = start(c);
    expectCleanStop(await terminate(c, agent), agent);
    const off = c.standIns.lines('set.log').filter((l) => l.endsWith(' off'));
    expect(off.map((l) => l.split(' ')[0]).sort()).toEqual(MANAGED_LINKS);
    const restored = agent.logs().filter((l) => /turned off again/.test(String(l.msg)));
    expect(restored.map((l) => l.link).sort(), agent.output()).toEqual(MANAGED_LINKS);
    await expectNoSurvivors(c);
  });

  it('closes scrape connections (keep-alive, half-sent request) at once, not after the work in flight', async () => {
    const c = await scrapesOpen(tmpDir());
    const agent = start(c);
    await waitFor('work in flight', () => c.inFlight(agent) || undefined);
    const sockets = await c.connect(await waitFor('metrics URL', () => agent.metricsUrl()));
    const closed = sockets.map((s: net.Socket) => new Promise<void>((resolve) => s.once('close', () => resolve())));
    cleanups.push(() => sockets.forEach((s) => s.destroy()));
    agent.signal('SIGTERM');
    let allClosed = false;
    void Promise.all(closed).then(() => (allClosed = true));
    await waitFor('the scrape connections closed', () => (allClosed ? true : undefined), EXIT_DEADLINE_MS);
    expectCleanStop(await exitOf(agent), agent);
  });

  it('stops within the deadline during a slowloris attack and a password flood, closing every connection', async () => {
    const c = await scrapesOpen(tmpDir());
    const dir = tmpDir();
    const webConfig = path.join(dir, 'web.yml');
    fs.writeFileSync(webConfig, `basic_auth_users:\n  prom: "${bcrypt.hashSync('right', 10)}"\n`);
    const agent = start({ ...c, args: [...c.args, '--web-config-file', webConfig] });
    await waitFor('work in flight', () => c.inFlight(agent) || undefined);
    const url = await waitFor('metrics URL', () => agent.metricsUrl());
    const attack = slowloris({ port: Number(new URL(url).port), from: ['127.0.0.2'], connections: 64 });
    const flood = passwordFlood({
      url: `${url}/metrics`,
      from: (n) => `127.0.0.${3 + (n % 50)}`,
      concurrency: 16,
      authorization: (n) => `Basic ${Buffer.from(`prom:guess${n}`).toString('base64')}`,
    });
    cleanups.push(
      () => attack.stop(),
      () => flood.stop(),
    );
    await waitFor('the attack under way', () => (attack.opened() >= 64 && flood.statuses().size > 0) || undefined);
    agent.signal('SIGTERM');
    expectCleanStop(await exitOf(agent), agent);
  });

  it('SIGINT stops the same way', async () => {
    const c = await slurmrestdHanging(tmpDir());
    const agent = start(c);
    await waitFor('work in flight', () => c.inFlight(agent) || undefined);
    agent.signal('SIGINT');
    expectCleanStop(await exitOf(agent), agent);
    expect(agent.logs().find((l) => l.msg === 'stopping')?.signal).toBe('SIGINT');
  });

  it('SIGHUP stops the same way, and --qp-counters manage turns its links off again', async () => {
    const c = await rdmaRestore(tmpDir(), 'exit 0');
    const agent = start(c);
    await waitFor('work in flight', () => c.inFlight(agent) || undefined);
    agent.signal('SIGHUP');
    const exit = await exitOf(agent);
    expect(exit.signal, agent.output()).toBeNull();
    expectCleanStop(exit, agent);
    expect(agent.logs().find((l) => l.msg === 'stopping')?.signal).toBe('SIGHUP');
    const off = c.standIns.lines('set.log').filter((l) => l.endsWith(' off'));
    expect(off.map((l) => l.split(' ')[0]).sort()).toEqual(MANAGED_LINKS);
  });

  it('a second signal exits at once, killing the helpers still running, naming at ERROR each link left on', async () => {
    const c = await rdmaRestore(tmpDir(), 'exec sleep 600');
    const agent = start(c);
    await waitFor('work in flight', () => c.inFlight(agent) || undefined);
    agent.signal('SIGTERM');
    await agent.whenLogged(/^stopping$/, EXIT_DEADLINE_MS);
    agent.signal('SIGTERM');
    const exit = await exitOf(agent);
    expect(exit.code, agent.output()).toBe(143);
    expect(agent.logged(/second signal: exiting at once/)).toBe(true);
    expect(agent.logged(/^stopped$/)).toBe(false);
    // Every restore hangs: all four links are left on, each named with the command that turns it off.
    const rdma = c.args[c.args.indexOf('--rdma-path') + 1];
    const left = agent.logs().filter((l) => l.level === 'error' && /per-PID QP counters off again/.test(String(l.msg)));
    expect(left, agent.output()).toHaveLength(1);
    expect(left[0]?.links).toEqual(MANAGED_LINKS);
    expect(left[0]?.commands).toEqual(MANAGED_LINKS.map((l) => `${rdma} statistic qp set link ${l} auto off`));
    await expectNoSurvivors(c);
  });
});

describe('helper runs are bounded whatever their children do', () => {
  it('an rdma that daemonizes and hangs is cut at its timeout, counted and logged, and run again', async () => {
    const c = await rdmaDaemonizing(tmpDir(), 'exec sleep 600');
    const agent = start(c);
    await waitFor(
      'a timed-out rdma run logged',
      () =>
        agent.logs().some((l) => /rdma run failed/.test(String(l.msg)) && /timed out/.test(String(l.err))) || undefined,
    );
    // Run again: one wedged run no longer stops every later one.
    await waitFor('rdma run again', () => (c.standIns.lines('calls.log').length >= 2 ? true : undefined));
    const firstRun = c.standIns.pids().slice(0, 2);
    await waitFor('the first run and its grandchild killed', () =>
      firstRun.every((pid) => !c.standIns.survivors().includes(pid)) ? true : undefined,
    );
    const monitoring = await waitFor('monitoring URL', () => {
      const started = agent.logs().find((l) => l.msg === 'node agent started');
      return typeof started?.monitoring === 'string' ? started.monitoring : undefined;
    });
    await waitFor('the failure counted', async () => {
      const text = await (await fetch(`${monitoring}/metrics`)).text();
      const line = text.split('\n').find((l) => /^ib_slurm_exporter_cycle_errors_total\{.*source="rdma"/.test(l));
      return line !== undefined && Number(line.split(' ').pop()) >= 1 ? true : undefined;
    });
    expect(agent.logged(/left processes holding its output/), agent.output()).toBe(true);
    expect(agent.hasExited()).toBe(false);
  });
});
