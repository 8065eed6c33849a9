/**
 * Every slurmrestd endpoint the client requests, and its URL path for an API version, spelt as
 * Slurm's own OpenAPI documents list it (test/cluster/api/paths.test.ts checks each against them).
 */
import { compareVersionsDesc, familyOf, type SupportedVersion } from './decode/versions.js';

export interface EndpointName {
  readonly api: 'slurm' | 'slurmdb';
  readonly name: string;
  /** The first API version serving the endpoint; an older one answers empty without a request. */
  readonly since?: SupportedVersion;
}

export const ENDPOINTS = {
  nodes: { api: 'slurm', name: 'nodes' },
  jobs: { api: 'slurm', name: 'jobs' },
  diag: { api: 'slurm', name: 'diag' },
  partitions: { api: 'slurm', name: 'partitions' },
  licenses: { api: 'slurm', name: 'licenses' },
  reservations: { api: 'slurm', name: 'reservations' },
  shares: { api: 'slurm', name: 'shares', since: 'v0.0.40' },
  qos: { api: 'slurmdb', name: 'qos' },
  associations: { api: 'slurmdb', name: 'associations' },
  accountingJobs: { api: 'slurmdb', name: 'jobs' },
} as const satisfies Readonly<Record<string, EndpointName>>;

/** One of ENDPOINTS: the client requests no other. */
export type KnownEndpoint = (typeof ENDPOINTS)[keyof typeof ENDPOINTS];

/** Listed without a trailing slash by every version that has them (v0.0.40 to v0.0.45). */
const NO_TRAILING_SLASH: ReadonlySet<string> = new Set(['shares']);

/** v0.0.36–v0.0.38 paths have no trailing slash (as 22.05 lists them); v0.0.39+ have one, /shares aside. */
export function endpointPath(api: 'slurm' | 'slurmdb', version: SupportedVersion, name: string): string {
  const base = `/${api}/${version}/${name}`;
  return familyOf(version) === 'v0038' || NO_TRAILING_SLASH.has(name) ? base : `${base}/`;
}

/** Does the version serve the endpoint at all (an API older than its `since` does not)? */
export function servedBy(ep: EndpointName, version: SupportedVersion): boolean {
  return ep.since === undefined || compareVersionsDesc(version, ep.since) <= 0;
}
