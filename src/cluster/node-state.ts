/**
 * Soperator's node state model, as its exporter's code behaves in production: broader than its
 * docs, e.g. an IDLE+DRAIN, UNKNOWN, ERROR, FAIL or INVALID node is unavailable too. Pure
 * functions of a decoded NodeState; words the model does not know (BLOCKED, DYNAMIC_NORM,
 * POWER_DOWN_ASAP, ...) are carried but never change a verdict.
 */
import type { NodeBaseState, NodeState } from './model.js';
import type { LEGACY_STATE_LABELS, LEGACY_STATE_VALUES, NEW_STATE_FLAG_LABELS } from './metrics.js';

/** Slurm sends one base word, but the exporter picks by this priority if it ever sends several. */
const BASE_PRIORITY: readonly NodeBaseState[] = ['UNKNOWN', 'DOWN', 'IDLE', 'ALLOCATED', 'ERROR', 'MIXED', 'FUTURE'];

/** Soperator's list. CLOUD alone is not in it: it says a node could be powered off, not that it is. */
const POWER_MANAGED = [
  'POWER_DOWN',
  'POWER_DRAIN',
  'POWERED_DOWN',
  'POWERING_DOWN',
  'POWERING_UP',
  'POWER_UP',
] as const;

export type LegacyStateLabel = (typeof LEGACY_STATE_LABELS)[number];
export type NewStateFlagLabel = (typeof NEW_STATE_FLAG_LABELS)[number];
export type LegacyStateLabels = { readonly [K in LegacyStateLabel]: (typeof LEGACY_STATE_VALUES)[K][number] };
/** A newer flag's value: "true" or empty. */
export type FlagValue = 'true' | '';
export type StateFlagLabels = Readonly<Record<NewStateFlagLabel, FlagValue>>;

const NEW_FLAG_WORDS: Readonly<Record<NewStateFlagLabel, string>> = {
  state_is_completing: 'COMPLETING',
  state_is_fail: 'FAIL',
  state_is_planned: 'PLANNED',
  state_is_not_responding: 'NOT_RESPONDING',
  state_is_invalid: 'INVALID',
  state_is_cloud: 'CLOUD',
  state_is_power_down: 'POWER_DOWN',
  state_is_power_drain: 'POWER_DRAIN',
  state_is_powered_down: 'POWERED_DOWN',
  state_is_powering_down: 'POWERING_DOWN',
  state_is_powering_up: 'POWERING_UP',
  state_is_power_up: 'POWER_UP',
};

/** True when the word is the base state or one of the flags. */
export function hasStateWord(state: NodeState, word: string): boolean {
  return state.base === word || state.flags.includes(word);
}

export function baseState(state: NodeState): NodeBaseState {
  return BASE_PRIORITY.find((b) => hasStateWord(state, b)) ?? state.base;
}

/** Powering up/down or powered down: DOWN/DRAIN is then the cloud lifecycle, not a failure. */
export function isPowerManaged(state: NodeState): boolean {
  return POWER_MANAGED.some((w) => hasStateWord(state, w));
}

/** Soperator's production rule, broader than its docs' "DOWN+* or IDLE+DRAIN+*". */
export function isUnavailable(state: NodeState): boolean {
  if (isPowerManaged(state)) return false;
  const base = baseState(state);
  return (
    hasStateWord(state, 'DOWN') ||
    hasStateWord(state, 'NOT_RESPONDING') ||
    (base === 'IDLE' && hasStateWord(state, 'DRAIN')) ||
    base === 'UNKNOWN' ||
    base === 'ERROR' ||
    hasStateWord(state, 'FAIL') ||
    hasStateWord(state, 'INVALID')
  );
}

/**
 * DRAIN while jobs still run. Power-managed nodes are excluded (our choice: Soperator's code
 * does not exclude them), since a power-down drain is the cloud lifecycle, like their DOWN/DRAIN.
 */
export function isDraining(state: NodeState): boolean {
  if (isPowerManaged(state) || !hasStateWord(state, 'DRAIN')) return false;
  const base = baseState(state);
  return base === 'ALLOCATED' || base === 'MIXED';
}

/** What `slurm_node_fails_total` counts transitions into. */
export function isFailed(state: NodeState): boolean {
  return !isPowerManaged(state) && (hasStateWord(state, 'DOWN') || hasStateWord(state, 'DRAIN'));
}

/** "true"/"" as the newer flag labels want; the legacy ones use String(boolean) instead. */
export function flagValue(on: boolean): FlagValue {
  return on ? 'true' : '';
}

/** state_base and the three flags kept as "true"/"false" for dashboards written before the others. */
export function legacyStateLabels(state: NodeState): LegacyStateLabels {
  return {
    state_base: baseState(state),
    state_is_drain: `${hasStateWord(state, 'DRAIN')}`,
    state_is_maintenance: `${hasStateWord(state, 'MAINTENANCE')}`,
    state_is_reserved: `${hasStateWord(state, 'RESERVED')}`,
  };
}

export function stateFlagLabels(state: NodeState): StateFlagLabels {
  const out = {} as Record<NewStateFlagLabel, FlagValue>;
  for (const [label, word] of Object.entries(NEW_FLAG_WORDS) as [NewStateFlagLabel, string][]) {
    out[label] = flagValue(hasStateWord(state, word));
  }
  return out;
}
