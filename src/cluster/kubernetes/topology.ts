/**
 * Worker placement on Soperator, joined from two Kubernetes lists: the cluster's worker pods (a
 * pod is named after its Slurm node; its `slurm.nebius.ai/nodeset` label names its NodeSet and is
 * set before the pod is scheduled) and the Kubernetes Nodes that carry an NVLink instance group
 * (`topology.nebius.com/nvl-instance-group-id`). Pure: parsed list items in, topology out.
 *
 * Every value read here becomes a label of each node and job series of its Slurm node, so one
 * value is bounded before it gets there: cut to LABEL_VALUE_MAX_BYTES of UTF-8 (at a character
 * boundary), its control characters and lone surrogates replaced by U+FFFD. The exposition
 * format escapes only backslash, quote and newline; a carriage return or NUL would reach it as is,
 * and a 100 kB label on a Node with 2,000 worker pods would be copied into every series of each.
 */
import type { NodeTopology } from '../model.js';
import { field, str } from '../api/json/read.js';

export const NODESET_LABEL = 'slurm.nebius.ai/nodeset';
export const NVLINK_GROUP_LABEL = 'topology.nebius.com/nvl-instance-group-id';
/** Far above what Kubernetes accepts for a label value (63 characters), far below harm. */
export const LABEL_VALUE_MAX_BYTES = 256;

export interface TopologyRead {
  /** Slurm node (worker pod) name → its topology. */
  readonly byNode: ReadonlyMap<string, NodeTopology>;
  /** Values that were cut or had characters replaced, in this read. */
  readonly adjusted: number;
  /** The first such value, for the log: where it was and how long it was (never the value). */
  readonly example?: string;
}

/** C0 and C1 control characters and DEL, and UTF-16 halves without their other half. */
function replaceUnsafe(s: string): string {
  let out: string[] | undefined;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    let keep = c >= 0x20 && (c < 0x7f || c > 0x9f);
    if (c >= 0xd800 && c <= 0xdbff) {
      const next = s.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) {
        out?.push(s[i] as string, s[i + 1] as string);
        i++;
        continue;
      }
      keep = false;
    } else if (c >= 0xdc00 && c <= 0xdfff) keep = false;
    if (!keep && out === undefined) out = [s.slice(0, i)];
    out?.push(keep ? (s[i] as string) : '\ufffd');
  }
  return out === undefined ? s : out.join('');
}

/** The value as it may be exported, and whether that differs from what was read. */
export function boundLabelValue(raw: string): { value: string; adjusted: boolean } {
  // Cut first, so a huge value is scanned no further than the bound; a replacement (3 bytes for
  // 1) may then need a second cut.
  const max = LABEL_VALUE_MAX_BYTES;
  const value = truncateUtf8(replaceUnsafe(truncateUtf8(raw, max)), max);
  return { value, adjusted: value !== raw };
}

/** At most `max` bytes of UTF-8, never half a character. */
function truncateUtf8(s: string, max: number): string {
  // Each UTF-16 unit is at most 3 bytes of UTF-8 (a surrogate pair, two units, is 4).
  if (s.length * 3 <= max || Buffer.byteLength(s, 'utf8') <= max) return s;
  let bytes = 0;
  let end = 0;
  for (const ch of s) {
    const cp = ch.codePointAt(0) as number;
    const size = cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
    if (bytes + size > max) break;
    bytes += size;
    end += ch.length;
  }
  return s.slice(0, end);
}

/** What the join needs of a worker pod: its name, NodeSet and Node (values bounded). */
export interface WorkerPod {
  readonly name: string;
  readonly nodesetName: string;
  readonly nodeName?: string;
  /** Set when the NodeSet value was bounded: where, and its length (never the value). */
  readonly bounded?: string;
}

/** What the join needs of a Kubernetes Node: its name and NVLink instance group (bounded). */
export interface GroupNode {
  readonly name: string;
  readonly nvlinkInstanceGroup: string;
  readonly bounded?: string;
}

/**
 * One list item reduced to what the join needs, its label value bounded: called as each item is
 * parsed, so a list is never held with its long values. Pure, so a retried list starts over.
 */
export function workerPod(item: unknown): WorkerPod | undefined {
  const name = nameOf(item);
  if (name === undefined) return undefined;
  const nodeName = str(field(field(item, 'spec'), 'nodeName'));
  const nodeset = label(item, NODESET_LABEL, `Pod ${name}`);
  return {
    name,
    nodesetName: nodeset.value,
    ...(nodeName !== undefined ? { nodeName } : {}),
    ...(nodeset.bounded !== undefined ? { bounded: nodeset.bounded } : {}),
  };
}

export function groupNode(item: unknown): GroupNode | undefined {
  const name = nameOf(item);
  if (name === undefined) return undefined;
  const group = label(item, NVLINK_GROUP_LABEL, `Node ${name}`);
  return {
    name,
    nvlinkInstanceGroup: group.value,
    ...(group.bounded !== undefined ? { bounded: group.bounded } : {}),
  };
}

/**
 * Every worker pod has an entry, scheduled or not (its NodeSet is known either way); its NVLink
 * group is that of the Node it runs on, "" when the pod is not scheduled or its Node not listed.
 */
export function join(pods: readonly WorkerPod[], nodes: readonly GroupNode[]): TopologyRead {
  const groups = new Map(nodes.map((n) => [n.name, n.nvlinkInstanceGroup]));
  const byNode = new Map<string, NodeTopology>();
  for (const p of pods) {
    const group = p.nodeName !== undefined ? groups.get(p.nodeName) : undefined;
    byNode.set(p.name, { nodesetName: p.nodesetName, nvlinkInstanceGroup: group ?? '' });
  }
  const bounded = [...nodes, ...pods].flatMap((x) => (x.bounded !== undefined ? [x.bounded] : []));
  return { byNode, adjusted: bounded.length, ...(bounded[0] !== undefined ? { example: bounded[0] } : {}) };
}

/** The join of two whole lists (parsed items). */
export function topologies(pods: readonly unknown[], nodes: readonly unknown[]): TopologyRead {
  const defined = <T>(x: T | undefined): x is T => x !== undefined;
  return join(pods.map(workerPod).filter(defined), nodes.map(groupNode).filter(defined));
}

function label(item: unknown, key: string, where: string): { value: string; bounded?: string } {
  const raw = str(field(field(field(item, 'metadata'), 'labels'), key));
  if (raw === undefined) return { value: '' };
  const b = boundLabelValue(raw);
  if (!b.adjusted) return { value: b.value };
  return {
    value: b.value,
    bounded: `${boundLabelValue(where).value} label ${key} (${Buffer.byteLength(raw, 'utf8')} bytes)`,
  };
}

const nameOf = (item: unknown): string | undefined => str(field(field(item, 'metadata'), 'name'));
