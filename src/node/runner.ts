/** The node agent's helper commands (squeue, rdma) run through the shared bounded runner. */
export { ChildRunner, RunError, type RunFailure, type RunLimits } from '../child-runner.js';
