/**
 * The landing page's GPUs, beside the HCA ports: each GPU unit (a GPU, or a MIG compute instance)
 * with its status, the jobs and processes holding it, and why; or one line saying why the node
 * has none.
 */
import { escapeHtml as esc } from '../telemetry/page.js';
import type { Cycle } from './join/cycle.js';
import type { Holder } from './explain.js';
import type { GpuStatus } from './join/attribution.js';

export interface GpuLandingRow {
  /** `nvidia<minor>`, as the device node and DCGM's `device` label name it. */
  readonly device: string;
  readonly uuid: string;
  /** NVML's form, DCGM's `pci_bus_id`. */
  readonly busId: string;
  /** `gi G ci C` for a MIG compute instance. */
  readonly mig?: string;
  readonly status: GpuStatus;
  readonly why: string;
  readonly jobs: readonly { readonly jobId: string; readonly holders: readonly Holder[] }[];
  readonly nonJob: readonly Holder[];
}

export interface GpuSection {
  readonly present: boolean;
  /** Why the node has no GPU (no driver, unreadable files). */
  readonly reason?: string;
  readonly rows: readonly GpuLandingRow[];
}

export function gpuSection(c: Cycle): GpuSection {
  const { snapshot: snap } = c;
  const byKey = new Map(snap.allocations.map((a) => [a.key, a]));
  const named = (pid: number, paths?: readonly string[]): Holder => {
    const h = { pid, comm: snap.holderNames.get(pid) ?? '?' };
    return paths === undefined ? h : { ...h, paths };
  };
  const rows = (c.attribution.gpus ?? []).map((v): GpuLandingRow => {
    const held = snap.gpuHolders.get(v.unit.key);
    const jobs = (held?.allocations ?? []).map((key) => {
      const a = byKey.get(key);
      const pids = new Set([...(a?.pids ?? []), ...(a?.stepdPids ?? [])]);
      const holders = (held?.jobPids ?? []).filter((pid) => pids.has(pid));
      return { jobId: a?.jobId ?? `${key} (unresolved)`, holders: holders.map((p) => named(p, held?.paths.get(p))) };
    });
    const { gpu, gi, ci } = v.unit;
    return {
      device: `nvidia${gpu.minor}`,
      uuid: gpu.uuid,
      busId: gpu.busIdDcgm,
      ...(gi === undefined ? {} : { mig: `gi ${gi} ci ${ci ?? '?'}` }),
      status: v.status,
      why: v.why,
      jobs,
      nonJob: (held?.nonJobPids ?? []).map((p) => named(p, held?.paths.get(p))),
    };
  });
  return { present: snap.gpus.present, ...(snap.gpus.reason === undefined ? {} : { reason: snap.gpus.reason }), rows };
}

/** PID and name, and the paths when one is not an ordinary NVIDIA device node (a chroot, a container). */
function holderText(h: Holder): string {
  const unusual = (h.paths ?? []).some((p) => !/^\/dev\/nvidia(\d+|-caps\/nvidia-cap\d+)$/.test(p));
  return unusual ? `${h.pid} ${h.comm} via ${(h.paths ?? []).join(', ')}` : `${h.pid} ${h.comm}`;
}

function renderRow(r: GpuLandingRow): string {
  const jobs =
    r.jobs
      .map(
        (j) =>
          `<div data-job="${esc(j.jobId)}">${esc(j.jobId)}: ${j.holders.map((h) => esc(holderText(h))).join(', ') || '—'}</div>`,
      )
      .join('') || '—';
  const nonJob = r.nonJob.map((h) => esc(holderText(h))).join('<br>') || '—';
  const unit = r.mig === undefined ? r.device : `${r.device} (${r.mig})`;
  return (
    `<tr class="${r.status}" data-gpu="${esc(r.uuid)}" data-unit="${esc(unit)}" data-status="${r.status}">` +
    `<td>${esc(unit)}</td><td><code>${esc(r.uuid)}</code><br><code>${esc(r.busId)}</code></td>` +
    `<td>${jobs}</td><td>${nonJob}</td><td>${r.status}</td><td>${esc(r.why)}</td></tr>`
  );
}

export function renderGpuSection(s: GpuSection): string {
  if (!s.present) return `<h2>GPUs</h2>\n<p id="no-gpus">No GPUs: ${esc(s.reason ?? 'none found')}</p>`;
  return `<h2>GPUs</h2>
<p>A job gets a GPU (with MIG on, a compute instance) only when it is its only holder and nothing was left unseen, as for a port.</p>
<table id="gpus">
<thead><tr><th>GPU</th><th>UUID, bus id</th><th>jobs (PIDs)</th><th>non-job processes</th><th>status</th><th>why</th></tr></thead>
<tbody>
${s.rows.map(renderRow).join('\n')}
</tbody></table>`;
}
