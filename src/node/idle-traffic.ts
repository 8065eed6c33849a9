/**
 * An idle port that carries traffic. The kernel's own RDMA users (IPoIB, storage clients such as
 * NFS over RDMA, Lustre, GPFS, NVMe over Fabrics) open no device file, so no process holds the
 * port and its bytes belong to no job: said beside `idle` so that a busy idle port is not taken
 * for a blind spot of the attribution.
 */
import { formatRate, formatSi } from '../telemetry/page.js';
import type { PortRow } from './explain.js';
import type { NodeSnapshot } from './join/snapshot.js';
import { dataCounter } from './observe.js';

const KERNEL = 'the kernel (IPoIB, storage over RDMA such as NFS, Lustre or NVMe-oF), which holds no fd';

/** The landing page's note for an idle port whose bytes moved in the latest step (bytes per second). */
export function idleMovingNote(row: PortRow, bytesPerSecond: number | undefined): string | undefined {
  if (row.status !== 'idle' || bytesPerSecond === undefined || !(bytesPerSecond > 0)) return undefined;
  return `it moves ${formatRate(bytesPerSecond, 'B')} with no holder: that traffic comes from ${KERNEL}, and is attributed to no job`;
}

/**
 * explain's note for an idle port that has counted bytes (it reads the node once, so it cannot
 * tell whether they are moving now): whatever it carries while no process holds it comes from
 * the kernel.
 */
export function idleCountedNote(row: PortRow, snap: NodeSnapshot): string | undefined {
  if (row.status !== 'idle') return undefined;
  const counters = snap.hca.hcas.find((h) => h.device === row.device)?.ports.find((p) => p.port === row.port)?.counters;
  if (counters === undefined) return undefined;
  const bytes = ['xmit', 'rcv'].map((d) => (dataCounter(counters, d as 'xmit' | 'rcv')?.value ?? 0n) * 4n);
  if (bytes.every((b) => b === 0n)) return undefined;
  const [tx, rx] = bytes.map((b) => formatSi(Number(b), 'B'));
  return `it has counted ${tx} sent and ${rx} received: what it carries while no process holds it comes from ${KERNEL}, and is attributed to no job`;
}

/** The row with its note after its why, when it has one. */
export function withNote(row: PortRow, note: string | undefined): PortRow {
  return note === undefined ? row : { ...row, why: `${row.why}; ${note}` };
}
