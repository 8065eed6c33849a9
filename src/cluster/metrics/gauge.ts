/** The gauge helper shared by Slurm's own families and the extra ones in its naming style. */
import { defineMetric as spec } from '../../telemetry/spec.js';
import type { MetricSpec } from '../../telemetry/spec.js';

export type GaugeSpec<L extends string = string> = MetricSpec<L, never> & { kind: 'gauge' };
export const gauge = <const L extends string>(
  name: string,
  labels: readonly L[],
  description: string,
  unit = '',
): GaugeSpec<L> => spec('gauge', name, unit, labels, description);
export const SINCE_38 = 'From API v0.0.38.';

export const values = <T>(r: Readonly<Record<string, T>>): T[] => Object.values(r);
