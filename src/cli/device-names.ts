/**
 * The devices on the node at start, each by the names the device patterns match (an HCA by its
 * sysfs name; a GPU as nvidia<minor> and by its UUID): what a pattern that matches nothing is
 * told against (device-patterns.ts). Listing only: no counter is read.
 */
import type { Logger } from '../log.js';
import { gpuNames } from '../node/join/excluded.js';
import { readGpus } from '../node/read/gpus.js';
import { Problems } from '../node/read/problems.js';
import { join, listDir, type Roots } from '../node/read/roots.js';
import { unmatchedPatternWarnings, type DevicePatternFlags } from './device-patterns.js';

/** Each pattern that matches no device on the node, warned once at start. */
export function warnUnmatchedPatterns(f: DevicePatternFlags, roots: Roots, logger: Logger): void {
  for (const warning of unmatchedOnNode(f, roots)) logger.warn(warning);
}

/** The warnings for the patterns that match no device on the node (nothing listed without patterns). */
export function unmatchedOnNode(f: DevicePatternFlags, roots: Roots): string[] {
  if (f.devicesInclude === undefined && f.devicesExclude === undefined) return [];
  return unmatchedPatternWarnings(f, deviceNamesOnNode(roots));
}

export function deviceNamesOnNode(roots: Roots): string[][] {
  const hcas = listDir(join(roots.sysfs, 'class', 'infiniband'));
  // A GPU inventory that cannot be read is the cycle's to count and log; here it is no device.
  const gpus = readGpus(roots.nvidiaProcfs ?? roots.procfs, new Problems());
  return [...(hcas.ok ? [...hcas.value].sort().map((d) => [d]) : []), ...gpus.gpus.map(gpuNames)];
}
