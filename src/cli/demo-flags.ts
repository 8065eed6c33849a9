/**
 * The demo command's flags, apart from both the command (demo.ts) and what it runs (demo-stack.ts),
 * so that neither imports the other's module for a type.
 */
import type { BindAddress } from '../telemetry/http.js';
import type { DevicePatternFlags } from './device-patterns.js';
import type { HostFlags, NodeCycleFlags } from './node.js';

/** The cgroup layouts the synthetic node can have (src/demo's TreeLayout; the compiler keeps them in step). */
export const DEMO_LAYOUTS = ['v1', 'v2', 'v2-sluid'] as const;
export type DemoLayout = (typeof DEMO_LAYOUTS)[number];

export interface DemoFlags extends NodeCycleFlags {
  layout: DemoLayout;
  nonJobHolder?: boolean;
  dir?: string;
  tick: number;
  cluster: boolean;
  clusterMetricsBindAddress: BindAddress;
  clusterMonitoringBindAddress: BindAddress;
  disableMetrics?: string;
}

/**
 * Node options the demo refuses, with why: it writes its own tree and serves its own rdma tool, so
 * options that point the node agent at the host's would be ignored or would undo the demo.
 * The compiler keeps this list equal to the node command's host options.
 */
export const DEMO_REFUSED: Record<keyof HostFlags | keyof DevicePatternFlags, string> = {
  sysfsRoot: '--sysfs-root',
  procfsRoot: '--procfs-root',
  cgroupRoot: '--cgroup-root',
  qpCounters: '--qp-counters',
  rdmaPath: '--rdma-path',
  nvidiaProcRoot: '--nvidia-proc-root',
  gpuAllocation: '--gpu-allocation',
  slurmdPath: '--slurmd-path',
  scontrolPath: '--scontrol-path',
  // Patterns choose among a real node's devices; the demo's stand-ins are fixed.
  devicesInclude: '--devices-include',
  devicesExclude: '--devices-exclude',
};
