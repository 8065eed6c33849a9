/**
 * slurmdbd's TRES arrays, decoded into the controller's string form: the one representation of
 * TRES past the decoders (cluster/tres.ts parses it).
 */
import { field, isRecord, num, str } from '../json/read.js';

/**
 * Renders slurmdbd's TRES array (`[{type:"cpu",count:4},{type:"gres",name:"gpu",count:2}]`) in
 * the controller's string form (`cpu=4,gres/gpu=2`). Memory counts are MiB and get an `M`
 * suffix, as slurmctld prints them. Entries without a usable count (energy is often null) are
 * left out. Undefined when nothing usable remains, so callers can fall back to another source.
 */
export function tresListToString(list: unknown): string | undefined {
  if (!Array.isArray(list)) return undefined;
  const parts: string[] = [];
  for (const t of list) {
    if (!isRecord(t)) continue;
    const type = str(field(t, 'type'));
    const n = num(field(t, 'count'));
    if (type === undefined || type === '' || n === undefined || n < 0) continue;
    const name = str(field(t, 'name'));
    const key = name !== undefined && name !== '' ? `${type}/${name}` : type;
    parts.push(`${key}=${n}${type.toLowerCase() === 'mem' ? 'M' : ''}`);
  }
  return parts.length > 0 ? parts.join(',') : undefined;
}
