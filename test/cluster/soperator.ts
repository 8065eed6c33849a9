/**
 * The Soperator revision whose exporter tests the cluster tests re-create (soperator-parity,
 * soperator-collector, kubernetes/topology-source): its main (c238d993) with pull request 2870
 * (nodeset_name on slurm_node_info, taken from the worker pod's label) merged in.
 */
export const SOPERATOR_COMMIT = '2bfb862ac772db115bafd68a8bfbc2aa95bbe068';
