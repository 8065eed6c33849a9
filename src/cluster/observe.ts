/**
 * Snapshot → the cluster's families (the cluster side of the step `node/observe.ts` is on the node
 * side): Soperator's families, Slurm's own (native) and those beyond Slurm's own set (extra). A
 * sub-collector that has not succeeded yet contributes no family at all, so a failing /jobs never
 * blanks the node families and vice versa.
 */
import type { AnyFamily } from '../telemetry/spec.js';
import { extraFamilySteps } from './observe/extra.js';
import { nativeFamilies, type NativeOptions } from './observe/native.js';
import { soperatorFamilies } from './observe/soperator.js';
import type { ClusterSnapshot } from './snapshot.js';
import { runSteps, Slice, type Steps } from '../steps.js';

export { observeState } from './observe/soperator.js';

export function observe(snap: ClusterSnapshot, nowMs: number, native: NativeOptions = {}): AnyFamily[] {
  return runSteps(observeSteps(snap, nowMs, native, new Slice()));
}

/** observe in pieces, for the agent's publish: the families beyond Slurm's own pass over every job. */
export function* observeSteps(
  snap: ClusterSnapshot,
  nowMs: number,
  native: NativeOptions,
  slice: Slice,
): Steps<AnyFamily[]> {
  const extra = yield* extraFamilySteps(snap, slice);
  return [...soperatorFamilies(snap, nowMs), ...nativeFamilies(snap, native), ...extra];
}
