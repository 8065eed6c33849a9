/** Soperator's node state model as its exporter's code behaves (broader than its docs), as tables. */
import { describe, expect, it } from 'vitest';
import { nodeState } from '../../../src/cluster/api/decode/states.js';
import {
  baseState,
  isDraining,
  isFailed,
  isPowerManaged,
  isUnavailable,
  legacyStateLabels,
  stateFlagLabels,
} from '../../../src/cluster/node-state.js';

const s = (...words: string[]) => nodeState(words);

describe('base state', () => {
  it.each([
    [['IDLE'], 'IDLE'],
    [['MIXED', 'DRAIN'], 'MIXED'],
    [['ALLOCATED', 'COMPLETING'], 'ALLOCATED'],
    [['DOWN', 'NOT_RESPONDING'], 'DOWN'],
    [['ERROR'], 'ERROR'],
    [['UNKNOWN', 'NOT_RESPONDING'], 'UNKNOWN'],
    [['FUTURE'], 'FUTURE'],
    // Several base words never come from Slurm; the exporter's priority decides.
    [['IDLE', 'DOWN'], 'DOWN'],
    [['MIXED', 'UNKNOWN'], 'UNKNOWN'],
    [['ALLOCATED', 'IDLE'], 'IDLE'],
    // No base word at all: the decoder says UNKNOWN.
    [['DRAIN'], 'UNKNOWN'],
    [['BLOCKED', 'EXTERNAL'], 'UNKNOWN'],
  ])('%j → %s', (words, base) => {
    expect(baseState(s(...words))).toBe(base);
  });
});

describe('flag labels', () => {
  const newFlags = [
    ['state_is_completing', 'COMPLETING'],
    ['state_is_fail', 'FAIL'],
    ['state_is_planned', 'PLANNED'],
    ['state_is_not_responding', 'NOT_RESPONDING'],
    ['state_is_invalid', 'INVALID'],
    ['state_is_cloud', 'CLOUD'],
    ['state_is_power_down', 'POWER_DOWN'],
    ['state_is_power_drain', 'POWER_DRAIN'],
    ['state_is_powered_down', 'POWERED_DOWN'],
    ['state_is_powering_down', 'POWERING_DOWN'],
    ['state_is_powering_up', 'POWERING_UP'],
    ['state_is_power_up', 'POWER_UP'],
  ] as const;

  it.each(newFlags)('%s is "true" with %s and "" without', (label, word) => {
    const on = stateFlagLabels(s('IDLE', word));
    expect(on[label]).toBe('true');
    // Exactly that one flag is on.
    expect(
      Object.entries(on)
        .filter(([, v]) => v === 'true')
        .map(([k]) => k),
    ).toEqual([label]);
    expect(stateFlagLabels(s('IDLE'))[label]).toBe('');
  });

  it.each([
    ['state_is_drain', 'DRAIN'],
    ['state_is_maintenance', 'MAINTENANCE'],
    ['state_is_reserved', 'RESERVED'],
  ] as const)('legacy %s is "true" with %s and "false" without', (label, word) => {
    expect(legacyStateLabels(s('MIXED', word))[label]).toBe('true');
    expect(legacyStateLabels(s('MIXED'))[label]).toBe('false');
  });

  it('reads the built fixture combination IDLE+RESERVED+MAINTENANCE', () => {
    expect(legacyStateLabels(s('IDLE', 'RESERVED', 'MAINTENANCE'))).toEqual({
      state_base: 'IDLE',
      state_is_drain: 'false',
      state_is_maintenance: 'true',
      state_is_reserved: 'true',
    });
  });

  it('tolerates unknown flags: they turn no label on and change no verdict', () => {
    const plain = s('IDLE');
    const odd = s('IDLE', 'BLOCKED', 'DYNAMIC_NORM', 'POWER_DOWN_ASAP', 'SOMETHING_NEW');
    expect(stateFlagLabels(odd)).toEqual(stateFlagLabels(plain));
    expect(legacyStateLabels(odd)).toEqual(legacyStateLabels(plain));
    expect([isUnavailable(odd), isFailed(odd), isDraining(odd), isPowerManaged(odd)]).toEqual([
      false,
      false,
      false,
      false,
    ]);
  });
});

describe('power management', () => {
  it.each(['POWER_DOWN', 'POWER_DRAIN', 'POWERED_DOWN', 'POWERING_DOWN', 'POWERING_UP', 'POWER_UP'])(
    '%s is power-managed',
    (w) => {
      expect(isPowerManaged(s('IDLE', 'CLOUD', w))).toBe(true);
      expect(isPowerManaged(s('IDLE', w))).toBe(true);
    },
  );

  it('CLOUD alone is not', () => {
    expect(isPowerManaged(s('IDLE', 'CLOUD'))).toBe(false);
    expect(isUnavailable(s('DOWN', 'CLOUD'))).toBe(true);
  });
});

describe('is_unavailable (production rule)', () => {
  it.each([
    // The documented cases.
    [['DOWN'], true],
    [['DOWN', 'DRAIN'], true],
    [['IDLE', 'DRAIN'], true],
    [['IDLE', 'DRAIN', 'MAINTENANCE'], true],
    // Broader than the docs.
    [['MIXED', 'NOT_RESPONDING'], true],
    [['UNKNOWN'], true],
    [['ERROR'], true],
    [['IDLE', 'FAIL'], true],
    [['ALLOCATED', 'FAIL'], true],
    [['IDLE', 'INVALID'], true],
    // Available.
    [['IDLE'], false],
    [['MIXED', 'DRAIN'], false],
    [['ALLOCATED', 'DRAIN'], false],
    [['ALLOCATED', 'COMPLETING'], false],
    [['IDLE', 'RESERVED', 'MAINTENANCE'], false],
    [['IDLE', 'PLANNED'], false],
    [['FUTURE'], false],
    [['IDLE', 'CLOUD'], false],
    // Power-managed: never unavailable, whatever else.
    [['DOWN', 'POWERED_DOWN'], false],
    [['IDLE', 'DRAIN', 'POWER_DOWN'], false],
    [['IDLE', 'CLOUD', 'POWERING_UP', 'NOT_RESPONDING'], false],
    [['UNKNOWN', 'POWERING_DOWN'], false],
    [['ERROR', 'POWER_UP'], false],
    [['IDLE', 'FAIL', 'POWER_DRAIN'], false],
  ])('%j → %s', (words, expected) => {
    expect(isUnavailable(s(...words))).toBe(expected);
  });
});

describe('draining and failed', () => {
  it.each([
    [['MIXED', 'DRAIN'], true, true],
    [['ALLOCATED', 'DRAIN'], true, true],
    [['IDLE', 'DRAIN'], false, true],
    [['DOWN'], false, true],
    [['DOWN', 'DRAIN'], false, true],
    [['MIXED'], false, false],
    [['IDLE', 'NOT_RESPONDING'], false, false],
    [['ERROR'], false, false],
    [['FUTURE', 'DRAIN'], false, true],
    [['MIXED', 'DRAIN', 'POWER_DOWN'], false, false],
    [['DOWN', 'POWERED_DOWN'], false, false],
    [['IDLE', 'DRAIN', 'POWER_DRAIN'], false, false],
  ])('%j → draining %s, failed %s', (words, draining, failed) => {
    expect(isDraining(s(...words))).toBe(draining);
    expect(isFailed(s(...words))).toBe(failed);
  });
});
