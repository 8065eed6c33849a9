/**
 * The situations a stop must cut short, each set up the same way for the stop tests and the
 * stop benchmark: the agent's arguments, the condition that says the work is in flight, and
 * what to close afterwards.
 */
import net from 'node:net';
import path from 'node:path';
import { demoTree } from '../../src/demo/scenarios.js';
import { writeTree } from '../../src/demo/nodetree.js';
import { DAEMONIZE, manageRdma, silentServer, StandIns, type AgentChild, type SilentServer } from './stopping.js';
import { freePort } from './tools.js';
import { treeFlags } from './node-tree.js';

export interface StopCase {
  /** The agent's arguments. */
  readonly args: readonly string[];
  /** Whether the work to be cut short is in flight (given the agent's log so far). */
  inFlight(agent: Pick<AgentChild, 'logged' | 'logs'>): boolean;
  /** Helpers the case wrote (their pids are recorded). */
  readonly standIns: StandIns;
  close(): Promise<void>;
}

const LOOPBACK = ['--metrics-bind-address', '127.0.0.1:0', '--monitoring-bind-address', '127.0.0.1:0'];
/** Links the manage stand-in reports in `qp auto off`. */
export const MANAGED_LINKS = ['mlx5_0/1', 'mlx5_1/1', 'mlx5_2/1', 'mlx5_3/1'];

function nodeArgs(dir: string, interval = '1s'): string[] {
  const roots = writeTree(path.join(dir, 'tree'), demoTree({ layout: 'v2', nonJobHolder: false }));
  return ['node', ...LOOPBACK, ...treeFlags(roots), '--node-name', 'gpu-001', '--collection-interval', interval];
}

function clusterArgs(server: string): string[] {
  return ['cluster', ...LOOPBACK, '--cluster-name', 'stoptest', '--slurm-api-server', server];
}

const nothing = async (): Promise<void> => undefined;

/** Node agent pushing OTLP to a port where nothing listens (the Collector is down). */
export async function otlpRefused(dir: string): Promise<StopCase> {
  const port = await freePort();
  return {
    args: [...nodeArgs(dir), '--otlp-endpoint', `http://127.0.0.1:${port}`, '--otlp-interval', '1s'],
    // Refused connections are retried until the push times out: one attempt has been made then.
    inFlight: ({ logged }) => logged(/OTLP export failed|metrics export timed out/),
    standIns: new StandIns(dir),
    close: nothing,
  };
}

/** Node agent pushing OTLP to a server that accepts and never answers. */
export async function otlpHanging(dir: string): Promise<StopCase & { readonly server: SilentServer }> {
  const server = await silentServer();
  return {
    server,
    args: [...nodeArgs(dir), '--otlp-endpoint', server.url, '--otlp-interval', '1s'],
    inFlight: () => server.accepted() > 0,
    standIns: new StandIns(dir),
    close: () => server.close(),
  };
}

/** Cluster agent whose slurmrestd accepts requests and never answers them. */
export async function slurmrestdHanging(dir: string): Promise<StopCase> {
  const server = await silentServer();
  return {
    args: [...clusterArgs(server.url), '--token-source', 'none'],
    inFlight: () => server.accepted() > 0,
    standIns: new StandIns(dir),
    close: () => server.close(),
  };
}

/** Cluster agent whose `scontrol token` hangs. */
export async function scontrolHanging(dir: string): Promise<StopCase> {
  const server = await silentServer();
  const s = new StandIns(dir);
  const scontrol = s.script('scontrol', 'exec sleep 600');
  return {
    args: [...clusterArgs(server.url), '--token-source', 'scontrol', '--scontrol-path', scontrol],
    inFlight: () => s.pids().length > 0,
    standIns: s,
    close: () => server.close(),
  };
}

/** Node agent whose squeue (job metadata) daemonizes a grandchild that keeps its stdout open. */
export async function squeueDaemonizing(dir: string): Promise<StopCase> {
  const s = new StandIns(dir);
  const squeue = s.script('squeue', `${DAEMONIZE}\nexec sleep 600`);
  return {
    args: [...nodeArgs(dir), '--job-metadata', 'squeue', '--squeue-path', squeue],
    inFlight: () => s.pids().length >= 2,
    standIns: s,
    close: nothing,
  };
}

/**
 * Node agent whose rdma daemonizes a grandchild that keeps stdout open (or, with
 * DAEMONIZE_TWICE, a daemon that forked twice and closed it), then exits (`then` 'exit 0') or
 * hangs ('exec sleep 600'). Each run is one line of calls.log.
 */
export async function rdmaDaemonizing(dir: string, then = 'exit 0', daemonize = DAEMONIZE): Promise<StopCase> {
  const s = new StandIns(dir);
  const rdma = s.script('rdma', `echo "$*" >> "$D/calls.log"\n${daemonize}\n${then}`);
  return {
    args: [...nodeArgs(dir), '--qp-counters', 'observe', '--rdma-path', rdma],
    inFlight: () => s.pids().length >= 2,
    standIns: s,
    close: nothing,
  };
}

/**
 * `--qp-counters manage` whose `rdma statistic qp set … auto off` runs `onSetOff` (hangs,
 * daemonizes); the default interval, so each rdma run may take the default 10 s.
 */
export async function rdmaRestore(dir: string, onSetOff: string): Promise<StopCase> {
  const s = new StandIns(dir);
  const rdma = manageRdma(s, MANAGED_LINKS, onSetOff);
  return {
    args: [...nodeArgs(dir, '15s'), '--qp-counters', 'manage', '--rdma-path', rdma],
    // The agent's own word that every link is on, not the stand-in's: set.log is written before
    // the agent has read the run's exit, and a stop then cuts that turn-on short instead.
    inFlight: ({ logs }) =>
      logs().filter((l) => typeof l.msg === 'string' && l.msg.startsWith('per-PID QP counters turned on')).length ===
      MANAGED_LINKS.length,
    standIns: s,
    close: nothing,
  };
}

/**
 * Cluster agent (its slurmrestd never answers) with scrapers connected: one keep-alive connection
 * after a scrape, one that sent half a request. Gives the sockets so the caller can see them closed.
 */
export async function scrapesOpen(dir: string): Promise<StopCase & { connect(url: string): Promise<net.Socket[]> }> {
  const server = await silentServer();
  return {
    args: [...clusterArgs(server.url), '--token-source', 'none'],
    inFlight: ({ logged }) => logged(/cluster agent started/) && server.accepted() > 0,
    standIns: new StandIns(dir),
    close: () => server.close(),
    connect: async (url) => {
      const { hostname, port } = new URL(url);
      const open = (): Promise<net.Socket> =>
        new Promise((resolve, reject) => {
          const sock = net.connect(Number(port), hostname, () => resolve(sock));
          sock.on('error', reject);
        });
      const keepAlive = await open();
      keepAlive.write(`GET /metrics HTTP/1.1\r\nHost: ${hostname}\r\nConnection: keep-alive\r\n\r\n`);
      keepAlive.resume();
      const half = await open();
      half.write(`GET /metrics HTTP/1.1\r\nHost: ${hostname}\r\n`);
      return [keepAlive, half];
    },
  };
}
