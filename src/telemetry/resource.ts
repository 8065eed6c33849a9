/** The resource every exported point carries: who is speaking. */
import { resourceFromAttributes, type Resource } from '@opentelemetry/resources';

export interface ResourceOptions {
  readonly serviceName: string;
  readonly serviceVersion: string;
  readonly hostName: string;
  /** Raw `OTEL_RESOURCE_ATTRIBUTES` (`k=v,k2=v2`, values percent-encoded). */
  readonly extra?: string;
  readonly attributes?: Readonly<Record<string, string>>;
}

export function buildResource(opts: ResourceOptions): Resource {
  return resourceFromAttributes({
    'host.name': opts.hostName,
    ...parseResourceAttributes(opts.extra ?? ''),
    ...opts.attributes,
    'service.name': opts.serviceName,
    'service.version': opts.serviceVersion,
  });
}

/** Parses the OTEL_RESOURCE_ATTRIBUTES syntax; bad pairs are rejected with the pair named. */
export function parseResourceAttributes(raw: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const pair of raw.split(',')) {
    if (pair.trim() === '') continue;
    const eq = pair.indexOf('=');
    if (eq <= 0) throw new Error(`invalid resource attribute "${pair}": expected key=value`);
    const key = pair.slice(0, eq).trim();
    try {
      out[key] = decodeURIComponent(pair.slice(eq + 1).trim());
    } catch {
      throw new Error(`invalid resource attribute "${pair}": bad percent-encoding`);
    }
  }
  return out;
}
