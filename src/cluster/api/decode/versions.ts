/**
 * API version negotiation.
 *
 * slurmrestd serves one set of paths per loaded plugin, `/slurm/vX/...` and `/slurmdb/vX/...`;
 * `GET /openapi/v3` lists them all. The agent reads that list, intersects it with the versions it
 * can decode, and uses the newest (or the operator's override), then maps the version to its
 * decoder family.
 */
import type { Decoded, ItemResult, SlurmDiag, SlurmJob, SlurmNode } from '../../model.js';
import * as v0038 from './decode-v0038.js';
import * as v004x from './decode-v004x.js';
import { field, isRecord } from '../json/read.js';

/** Versions this agent can decode, newest first. */
export const SUPPORTED_VERSIONS = [
  'v0.0.45',
  'v0.0.44',
  'v0.0.43',
  'v0.0.42',
  'v0.0.41',
  'v0.0.40',
  'v0.0.39',
  'v0.0.38',
  'v0.0.37',
  'v0.0.36',
] as const;
export type SupportedVersion = (typeof SUPPORTED_VERSIONS)[number];

export interface ServedVersions {
  /** Versions with `/slurm/vX/` paths (slurmctld endpoints), newest first. */
  readonly slurm: readonly string[];
  /** Versions with `/slurmdb/vX/` paths (slurmdbd endpoints), newest first. */
  readonly slurmdb: readonly string[];
}

const PATH_RE = /^\/(slurm|slurmdb)\/(v\d+\.\d+\.\d+)(?:\/|$)/;
const VERSION_RE = /^v?(\d+)\.(\d+)\.(\d+)$/;

function versionKey(v: string): [number, number, number] | undefined {
  const m = VERSION_RE.exec(v.trim());
  return m === null ? undefined : [Number(m[1]), Number(m[2]), Number(m[3])];
}

/** Orders versions newest first; unparseable strings sort last. */
export function compareVersionsDesc(a: string, b: string): number {
  const ka = versionKey(a);
  const kb = versionKey(b);
  if (ka === undefined || kb === undefined) return ka === undefined ? (kb === undefined ? 0 : 1) : -1;
  for (let i = 0; i < 3; i++) {
    const d = (kb[i] as number) - (ka[i] as number);
    if (d !== 0) return d;
  }
  return 0;
}

/** `0.0.44` or `v0.0.44` → `v0.0.44`; undefined when it is not a version at all. */
export function normalizeVersion(v: string): string | undefined {
  const k = versionKey(v);
  return k === undefined ? undefined : `v${k.join('.')}`;
}

/**
 * Served versions from an OpenAPI document. Paths look like `/slurm/v0.0.44/nodes/` (and, on
 * 22.05, `/slurm/v0.0.36/diag` without the trailing slash). Static specs of old releases put the
 * prefix in `servers[].url` instead, so those are read too.
 */
export function parseServedVersions(openapi: unknown): ServedVersions {
  const slurm = new Set<string>();
  const slurmdb = new Set<string>();
  const add = (p: string): void => {
    const m = PATH_RE.exec(p);
    if (m === null) return;
    (m[1] === 'slurm' ? slurm : slurmdb).add(m[2] as string);
  };
  const paths = field(openapi, 'paths');
  if (isRecord(paths)) for (const p of Object.keys(paths)) add(p);
  const servers = field(openapi, 'servers');
  if (Array.isArray(servers))
    for (const s of servers) if (typeof field(s, 'url') === 'string') add(field(s, 'url') as string);
  return { slurm: [...slurm].sort(compareVersionsDesc), slurmdb: [...slurmdb].sort(compareVersionsDesc) };
}

export function isSupportedVersion(v: string): v is SupportedVersion {
  return (SUPPORTED_VERSIONS as readonly string[]).includes(v);
}

export type PickResult =
  { readonly ok: true; readonly version: SupportedVersion } | { readonly ok: false; readonly error: string };

/**
 * Chooses the API version to use: the override when given (it must be one this agent decodes and,
 * when the server's list is known, one it serves), else the newest version both sides know.
 * An empty `served` list means discovery found nothing: only an override can help then.
 */
export function pickVersion(served: readonly string[], override?: string): PickResult {
  const servedNorm = served.map(normalizeVersion).filter((v): v is string => v !== undefined);
  if (override !== undefined && override.trim() !== '') return pickOverride(servedNorm, override);
  const usable = servedNorm.filter(isSupportedVersion).sort(compareVersionsDesc);
  const best = usable[0];
  if (best !== undefined) return { ok: true, version: best };
  if (servedNorm.length === 0) {
    return { ok: false, error: 'slurmrestd advertises no API versions (is the openapi/slurmctld plugin loaded?)' };
  }
  return {
    ok: false,
    error: `no common API version: slurmrestd serves ${servedNorm.join(', ')}; this agent understands ${SUPPORTED_VERSIONS.at(-1)}–${SUPPORTED_VERSIONS[0]}`,
  };
}

function pickOverride(served: readonly string[], override: string): PickResult {
  const v = normalizeVersion(override);
  if (v === undefined) return { ok: false, error: `"${override}" is not an API version (expected e.g. v0.0.44)` };
  if (!isSupportedVersion(v)) {
    return {
      ok: false,
      error: `API version ${v} is not supported by this agent (supported: ${SUPPORTED_VERSIONS.join(', ')})`,
    };
  }
  if (served.length > 0 && !served.includes(v)) {
    return { ok: false, error: `API version ${v} was requested but slurmrestd serves only ${served.join(', ')}` };
  }
  return { ok: true, version: v };
}

export type DecoderFamilyName = 'v0038' | 'v004x';

/** The decoders of one API family: whole responses and single elements (for streaming). */
export interface DecoderFamily {
  readonly name: DecoderFamilyName;
  decodeNodes(body: unknown): Decoded<SlurmNode>;
  decodeJobs(body: unknown): Decoded<SlurmJob>;
  decodeAccountingJobs(body: unknown): Decoded<SlurmJob>;
  decodeDiag(body: unknown): Decoded<SlurmDiag>;
  decodeNode(element: unknown): ItemResult<SlurmNode>;
  decodeJob(element: unknown): ItemResult<SlurmJob>;
  decodeAccountingJob(element: unknown): ItemResult<SlurmJob>;
}

const FAMILIES: Readonly<Record<DecoderFamilyName, DecoderFamily>> = {
  v0038: { name: 'v0038', ...v0038 },
  v004x: { name: 'v004x', ...v004x },
};

/** v0.0.36–v0.0.38 were the openapi plugins; v0.0.39 onwards the data_parser plugins. */
export function familyOf(version: SupportedVersion): DecoderFamilyName {
  const k = versionKey(version) as [number, number, number];
  return k[2] <= 38 ? 'v0038' : 'v004x';
}

export function decoderFor(version: SupportedVersion): DecoderFamily {
  return FAMILIES[familyOf(version)];
}
