/**
 * explain's start-up checks, the node agent's own: a root that is missing or on the wrong kernel
 * filesystem, a bad device pattern, an unreadable device table and a refused value are reported
 * together (exit 2) before any cycle, instead of a table of ports that reads as an answer.
 */
import type { DeviceFilter } from '../node/join/excluded.js';
import type { DeviceTable } from '../node/read/device-table.js';
import type { Roots } from '../node/read/roots.js';
import { unmatchedOnNode } from './device-names.js';
import { deviceFilter, type DevicePatternFlags } from './device-patterns.js';
import { loadDeviceTable, withDeviceTable } from './explain-tree.js';
import { rootErrors, rootsOf, type RootFlags } from './node.js';
import { SettingErrors } from './settings.js';

export interface ExplainSettingFlags extends RootFlags, DevicePatternFlags {
  deviceTable?: string;
}

/** What explain reads with, once every setting is known good. */
export interface ExplainSettings {
  readonly roots: Roots;
  readonly table?: DeviceTable;
  readonly devices?: DeviceFilter;
  /** Patterns that match no device on the node: said, not fatal (a device can appear later). */
  readonly warnings: readonly string[];
}

/** The settings, or one ConfigError naming every bad one (`refused`: what commander and the parsers refused). */
export function explainSettings(f: ExplainSettingFlags, refused: readonly string[]): ExplainSettings {
  const errors = new SettingErrors(refused);
  errors.add(...rootErrors(f));
  const devices = errors.check(() => deviceFilter(f));
  const file = f.deviceTable;
  const table = file === undefined ? undefined : errors.check(() => loadDeviceTable(file));
  errors.throwIfAny();
  const roots = rootsOf(f);
  return {
    roots: withDeviceTable(roots, table),
    ...(table === undefined ? {} : { table }),
    ...(devices === undefined ? {} : { devices }),
    warnings: unmatchedOnNode(f, roots),
  };
}
