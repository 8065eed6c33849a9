/**
 * The demo's stand-in for what the topology sub-collector reads from Kubernetes (Soperator's worker
 * pods and their Nodes), so that the demo shows the NodeSet and NVLink labels without a cluster:
 * every node of the fake cluster is a worker of a NodeSet named after its partition, and GPU nodes
 * sit in NVLink instance groups of NVLINK_GROUP_NODES nodes, in node order.
 */
import type { TopologyRead } from '../cluster/kubernetes/topology.js';
import type { NodeTopology } from '../cluster/model.js';
import type { FakeCluster } from './fake-cluster.js';

/** Nodes per NVLink instance group (a rack of GPU nodes joined by one NVLink domain). */
export const NVLINK_GROUP_NODES = 4;

export function fakeTopology(cluster: FakeCluster): TopologyRead {
  const byNode = new Map<string, NodeTopology>();
  let gpuNodes = 0;
  for (const n of cluster.view().nodes) {
    const group = n.gpus > 0 ? `nvl-${Math.floor(gpuNodes++ / NVLINK_GROUP_NODES)}` : '';
    byNode.set(n.name, { nodesetName: `worker-${n.partition}`, nvlinkInstanceGroup: group });
  }
  return { byNode, adjusted: 0 };
}
