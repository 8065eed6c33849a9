/**
 * DCGM exporter's series as its own repository recorded them (fixtures/dcgm), rendered as its
 * exposition renders them, and stand-in GPUs the node agent reads that are the same GPUs.
 */
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import type { GpuSpec } from '../../src/demo/nodetree.js';

/** One recorded metric as dcgm-exporter's collector keeps it (its JSON field names). */
export interface DcgmMetric {
  readonly counter: { readonly field_name: string; readonly prom_type: string; readonly help: string };
  readonly value: string;
  readonly gpu: string;
  readonly gpu_uuid: string;
  readonly gpu_device: string;
  readonly gpu_model: string;
  readonly pci_bus_id: string;
  /** The name of the label that carries the UUID (`UUID` by default). */
  readonly uuid: string;
  readonly mig_profile?: string;
  readonly gpu_instance_id?: string;
  readonly hostname: string;
}

const FIXTURE = fileURLToPath(new URL('../../fixtures/dcgm/h100-mig-metrics.json', import.meta.url));

export function recordedDcgm(): Record<string, readonly DcgmMetric[]> {
  return (JSON.parse(fs.readFileSync(FIXTURE, 'utf8')) as { metrics: Record<string, DcgmMetric[]> }).metrics;
}

/**
 * The host label's name: `Hostname` in released versions (up to 4.5.3-4.8.2), `hostname` on the
 * main branch since the rename.
 */
export type HostLabel = 'Hostname' | 'hostname';

/** One series line, label for label in the order of the exporter's GPU template. */
function seriesLine(name: string, m: DcgmMetric, hostLabel: HostLabel, host: string): string {
  const labels = [
    `gpu="${m.gpu}"`,
    `${m.uuid}="${m.gpu_uuid}"`,
    `pci_bus_id="${m.pci_bus_id}"`,
    `device="${m.gpu_device}"`,
    `modelName="${m.gpu_model}"`,
  ];
  if (m.mig_profile) labels.push(`GPU_I_PROFILE="${m.mig_profile}"`, `GPU_I_ID="${m.gpu_instance_id ?? ''}"`);
  labels.push(`${hostLabel}="${host}"`);
  return `${name}{${labels.join(',')}} ${m.value}`;
}

/**
 * The recorded series as the exporter would serve them on `host` (the recording says
 * `localhost`; the host is the one thing rewritten, so that it names the node under test).
 */
export function dcgmExposition(hostLabel: HostLabel, host: string): string {
  const out: string[] = [];
  for (const [name, metrics] of Object.entries(recordedDcgm())) {
    const first = metrics[0];
    if (!first) continue;
    out.push(`# HELP ${name} ${first.counter.help}`, `# TYPE ${name} ${first.counter.prom_type}`);
    for (const m of metrics) out.push(seriesLine(name, m, hostLabel, host));
  }
  return out.join('\n') + '\n';
}

/** NVML's bus id (`00000000:1B:00.0`) as the driver names its directory (`0000:1b:00.0`). */
export function driverBusId(nvml: string): string {
  const m = /^([0-9A-Fa-f]{8}):(.+)$/.exec(nvml);
  if (!m) throw new Error(`not an NVML bus id: ${nvml}`);
  return `${(m[1] as string).slice(4)}:${m[2] as string}`.toLowerCase();
}

/**
 * The recorded GPUs as stand-ins: UUID, bus id, model and minor (`nvidia<N>`) as recorded; a GPU
 * recorded with MIG instances gets those GPU instances, each with compute instance 0 (the
 * recording names no compute instance).
 */
export function recordedGpus(): GpuSpec[] {
  const byUuid = new Map<string, { m: DcgmMetric; gis: Set<number> }>();
  for (const metrics of Object.values(recordedDcgm()))
    for (const m of metrics) {
      const entry = byUuid.get(m.gpu_uuid) ?? { m, gis: new Set<number>() };
      if (m.gpu_instance_id) entry.gis.add(Number(m.gpu_instance_id));
      byUuid.set(m.gpu_uuid, entry);
    }
  return [...byUuid.values()].map(({ m, gis }) => {
    const g: GpuSpec = {
      busId: driverBusId(m.pci_bus_id),
      uuid: m.gpu_uuid,
      minor: Number(m.gpu_device.replace(/^nvidia/, '')),
      model: m.gpu_model,
    };
    return gis.size === 0 ? g : { ...g, mig: [...gis].sort((a, b) => a - b).map((gi) => ({ gi, cis: [0] })) };
  });
}

/** A loopback HTTP server that serves `text` as /metrics, like a DCGM exporter. */
export async function serveExposition(text: string): Promise<{ target: string; close: () => Promise<void> }> {
  const server = http.createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4' });
    res.end(text);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    target: `127.0.0.1:${port}`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
