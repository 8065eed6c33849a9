/** Slurm's own node families (`/metrics/nodes`), from /nodes. */
import { point, type LazyFamily } from '../../telemetry/spec.js';
import { NATIVE_NODE_METRICS as N, NATIVE_NODE_SHARED_METRICS as NS, NATIVE_NODE_STATES } from '../metrics.js';
import type { SlurmNode } from '../model.js';
import { nodeCpusIdle, nodeGpus, nodeGpusAlloc, nodeMemoryEffective, type TresOf } from './native-counting.js';
import { countStates, nodeStateNames } from './native-states.js';
import { gaugeOf, type GaugeSpec, type NativeFamily } from './helpers.js';

function perNode(
  spec: GaugeSpec<'node'>,
  nodes: readonly SlurmNode[],
  value: (n: SlurmNode) => number | undefined,
): LazyFamily {
  return {
    spec,
    lazy: {
      *[Symbol.iterator]() {
        for (const n of nodes) {
          const v = value(n);
          if (v !== undefined && Number.isFinite(v)) yield point(spec, { node: n.name }, v);
        }
      },
    },
  };
}

export function nodeFamilies(nodes: readonly SlurmNode[], tres: TresOf): NativeFamily[] {
  const states = countStates(NATIVE_NODE_STATES, nodes.map(nodeStateNames));
  return [
    perNode(N.cpus, nodes, (n) => n.cpus),
    perNode(N.cpusAlloc, nodes, (n) => n.alloc_cpus),
    perNode(N.memory, nodes, (n) => n.real_memory),
    perNode(N.memoryAlloc, nodes, (n) => n.alloc_memory),
    perNode(N.gpus, nodes, (n) => nodeGpus(n, tres)),
    perNode(N.gpusAlloc, nodes, (n) => nodeGpusAlloc(n, tres)),
    gaugeOf(N.nodes, nodes.length),
    ...NATIVE_NODE_STATES.map((s) => gaugeOf(N.states[s], states[s])),
  ];
}

/** slurmctld's `/metrics/nodes` values of the four names `/metrics` also uses (MiB, its idle). */
export function sharedNodeFamilies(nodes: readonly SlurmNode[], specs: typeof NS): NativeFamily[] {
  return [
    perNode(specs.cpusIdle, nodes, nodeCpusIdle),
    perNode(specs.cpusEffective, nodes, (n) => n.effective_cpus),
    // slurmctld reports 0 until slurmd has sent a figure.
    perNode(specs.memoryFree, nodes, (n) => n.free_mem ?? 0),
    perNode(specs.memoryEffective, nodes, nodeMemoryEffective),
  ];
}
