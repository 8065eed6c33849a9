/**
 * The attribution table, as plain rows: one per port, with its holders,
 * status and why. The terminal (`slurm-otel explain`) and the landing page
 * render the same rows.
 */
import type { Cycle } from './join/cycle.js';
import type { PortStatus } from './join/attribution.js';
import type { HolderEvidence, NodeSnapshot } from './join/snapshot.js';

/** Counters an operator looks at first during a fabric incident. */
export const KEY_COUNTERS = [
  'packet_seq_err',
  'out_of_sequence',
  'local_ack_timeout_err',
  'port_xmit_discards',
  'symbol_error',
  'link_downed',
] as const;

export interface Holder {
  readonly pid: number;
  readonly comm: string;
  /** Its fds' paths on the device as the process knows them (the link text: a chroot's prefix shows). */
  readonly paths?: readonly string[];
}

/** A holder and what shows it holds the device. */
export interface NonJobHolder extends Holder {
  readonly evidence: readonly HolderEvidence[];
}

export interface JobHolder {
  readonly jobId: string;
  /** Its processes with an fd on the device, or charged for it by their own rdma cgroup. */
  readonly holders: readonly Holder[];
  readonly evidence: readonly HolderEvidence[];
}

export interface PortRow {
  readonly device: string;
  readonly port: string;
  readonly linkLayer: string;
  readonly rate: string;
  readonly state: string;
  /** The attribution's status; `excluded` for a port of an HCA the operator left out. */
  readonly status: PortStatus | 'excluded';
  readonly why: string;
  /** Jobs holding the device, each with its holding processes. */
  readonly jobs: readonly JobHolder[];
  readonly nonJob: readonly NonJobHolder[];
  /** The attributed job (status sole). */
  readonly attributedTo?: string;
  readonly counters: Readonly<Record<string, string>>;
}

export function attributionRows(c: Cycle): PortRow[] {
  return [...judgedRows(c), ...excludedRows(c.snapshot)];
}

/** The ports of the HCAs the operator left out: shown, never judged (they have no holders and no series). */
function excludedRows(snap: NodeSnapshot): PortRow[] {
  return (snap.excluded ?? [])
    .filter((e) => e.kind === 'hca')
    .flatMap((e) =>
      e.ports.map((port) => ({
        device: e.device,
        port,
        linkLayer: '',
        rate: '',
        state: '',
        status: 'excluded' as const,
        why: e.why,
        jobs: [],
        nonJob: [],
        counters: {},
      })),
    );
}

function judgedRows(c: Cycle): PortRow[] {
  const { snapshot: snap } = c;
  const byKey = new Map(snap.allocations.map((a) => [a.key, a]));
  const ports = new Map(snap.hca.hcas.flatMap((h) => h.ports.map((p) => [`${h.device} ${p.port}`, p] as const)));
  return c.attribution.verdicts.map((v) => {
    const p = ports.get(`${v.device} ${v.port}`);
    const held = snap.holders.get(v.device);
    const holder = (pid: number): Holder => {
      const paths = held?.paths.get(pid);
      const named = { pid, comm: snap.holderNames.get(pid) ?? '?' };
      return paths === undefined ? named : { ...named, paths };
    };
    const jobs = (held?.allocations ?? []).map((key) => {
      const a = byKey.get(key);
      const pids = new Set([...(a?.pids ?? []), ...(a?.stepdPids ?? [])]);
      const evidence = held?.jobEvidence.get(key) ?? [];
      return {
        jobId: a?.jobId ?? `${a?.id ?? key} (unresolved)`,
        holders: (held?.jobPids ?? []).filter((pid) => pids.has(pid)).map(holder),
        evidence,
      };
    });
    const counters: Record<string, string> = {};
    for (const name of KEY_COUNTERS) {
      const value = p?.counters.get(name);
      if (value !== undefined) counters[name] = value.toString();
    }
    const row = {
      device: v.device,
      port: v.port,
      linkLayer: p?.linkLayer ?? '',
      rate: p?.rate ?? '',
      state: p?.state ?? '',
      status: v.status,
      why: v.why,
      jobs,
      counters,
      nonJob: (held?.nonJobPids ?? []).map((pid) => ({
        ...holder(pid),
        evidence: held?.nonJobEvidence.get(pid) ?? [],
      })),
    };
    return v.soleJobId === undefined ? row : { ...row, attributedTo: v.soleJobId };
  });
}

/**
 * A holder as the table names it: PID and name, and the paths it holds the device by when one is
 * not the usual /dev/infiniband/uverbsN (a chroot, a container, a renamed node).
 */
export function holderText(h: Holder): string {
  const unusual = (h.paths ?? []).some((p) => !/^\/dev\/infiniband\/uverbs\d+$/.test(p));
  return unusual ? `${h.pid} ${h.comm} via ${(h.paths ?? []).join(', ')}` : `${h.pid} ${h.comm}`;
}

const EVIDENCE_WORDS: Record<HolderEvidence, string> = {
  fd: 'fd',
  'rdma-cgroup': 'rdma cgroup',
  'rdma-context': 'kernel context list',
};

/** What shows a holder, in words: `[fd]`, `[rdma cgroup]` or `[fd + rdma cgroup]`. */
export function evidenceText(evidence: readonly HolderEvidence[]): string {
  return `[${evidence.map((e) => EVIDENCE_WORDS[e]).join(' + ')}]`;
}

/** What to say first when the cgroup root holds no Slurm hierarchy; undefined when it holds one. */
export function slurmCgroupsNote(snap: NodeSnapshot): string | undefined {
  if (snap.slurmCgroups.found) return undefined;
  return `no Slurm job cgroups found: looked for ${snap.slurmCgroups.searched}; no job can be attributed on this node`;
}
