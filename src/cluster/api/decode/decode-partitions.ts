/**
 * Partitions (`GET /slurm/vX/partitions/`), every version: v0.0.36–v0.0.38 put `nodes` (the
 * hostlist), `total_nodes`, `total_cpus` and `tres` (a string) at the top; v0.0.40+ nest them as
 * `nodes.{configured,total}`, `cpus.total` and `tres.configured` (the tier: `priority_tier`, then
 * `priority.tier`). Both shapes are read, so a proxied or mixed response still decodes. Never throws.
 */
import type { ItemResult, SlurmPartition } from '../../model.js';
import { NOT_AN_OBJECT } from './common.js';
import { count, field, isRecord } from '../json/read.js';
import { text } from './states.js';

const PARTITION_MEMBERS = [
  'name',
  'nodes',
  'cpus',
  'tres',
  'total_nodes',
  'total_cpus',
  'priority',
  'priority_tier',
] as const;

export function decodePartition(element: unknown): ItemResult<SlurmPartition> {
  if (!isRecord(element)) return NOT_AN_OBJECT;
  const name = text(element['name']);
  if (name === undefined) return { ok: false, reason: 'partition without a name' };
  const nodes = element['nodes'];
  const partition: SlurmPartition = {
    name,
    nodes: (isRecord(nodes) ? text(nodes['configured']) : text(nodes)) ?? '',
    total_nodes: count(isRecord(nodes) ? nodes['total'] : element['total_nodes']),
    total_cpus: count(field(element['cpus'], 'total') ?? element['total_cpus']),
    tres: isRecord(element['tres']) ? text(element['tres']['configured']) : text(element['tres']),
    priority_tier: count(field(element['priority'], 'tier') ?? element['priority_tier']),
  };
  return { ok: true, item: partition };
}
decodePartition.members = PARTITION_MEMBERS;
