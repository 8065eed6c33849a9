/**
 * The demo command's flags, apart from both the command (demo.ts) and what it runs (demo-stack.ts),
 * so that neither imports the other's module for a type.
 */
import type { BindAddress } from '../telemetry/http.js';
import type { NodeFlags } from './node.js';

/** The cgroup layouts the synthetic node can have (src/demo's TreeLayout; the compiler keeps them in step). */
export const DEMO_LAYOUTS = ['v1', 'v2', 'v2-sluid'] as const;
export type DemoLayout = (typeof DEMO_LAYOUTS)[number];

export interface DemoFlags extends NodeFlags {
  layout: DemoLayout;
  nonJobHolder?: boolean;
  dir?: string;
  tick: number;
  cluster: boolean;
  clusterMetricsBindAddress: BindAddress;
  clusterMonitoringBindAddress: BindAddress;
}
