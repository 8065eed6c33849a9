/**
 * Validation of rendered bodies against the Slurm OpenAPI specs, following the approach of
 * test/cluster/fixtures-schema.test.ts: the spec's `components` are loaded into ajv as they are,
 * except for the generated specs' slash-path `required` entries (`nodes/count`), which are
 * rewritten as the nested requirements they mean.
 *
 * Two additions for the fake slurmrestd:
 * - `unknownMembers` lists members a v0.0.4x body has that the version's schema does not define,
 *   which ajv lets through (the specs never say additionalProperties: false).
 * - v0.0.38 is checked against the static 22.05 specs with the few corrections that real 22.05.8
 *   needs (recorded in fixtures/slurm/recorded/): see V0038_PATCHES.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Ajv } from 'ajv';
import type { ValidateFunction } from 'ajv';
import type { Endpoint, RenderVersion } from '../../src/demo/slurm-render.js';
import { FIXTURES } from '../cluster/fixtures.js';

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };
type JsonObject = { [k: string]: Json };

function isObject(v: Json | undefined): v is JsonObject {
  return v !== null && v !== undefined && typeof v === 'object' && !Array.isArray(v);
}

function strings(v: Json | undefined): string[] {
  return Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : [];
}

/** `required: ["nodes/count"]` → `nodes` required, and `count` required inside it (inline schemas only). */
function normaliseRequired(node: Json): Json {
  if (Array.isArray(node)) return node.map(normaliseRequired);
  if (!isObject(node)) return node;
  const out: JsonObject = {};
  for (const [k, v] of Object.entries(node)) out[k] = normaliseRequired(v);
  const required = strings(out['required']);
  if (required.length === 0) return out;
  const props = out['properties'];
  const direct = new Set<string>();
  for (const r of required) {
    const slash = r.indexOf('/');
    if (slash < 0) {
      direct.add(r);
      continue;
    }
    const parent = r.slice(0, slash);
    const target = isObject(props) ? props[parent] : undefined;
    if (!isObject(target) || '$ref' in target) continue;
    direct.add(parent);
    (props as JsonObject)[parent] = normaliseRequired({
      ...target,
      required: [...strings(target['required']), r.slice(slash + 1)],
    });
  }
  out['required'] = [...direct];
  return out;
}

const INT32_MIN = -(2 ** 31);
const UINT32_MAX = 2 ** 32 - 1;

function newAjv(): Ajv {
  const ajv = new Ajv({ strict: false, allErrors: true });
  // Slurm tags unsigned 32-bit values (priorities, uids) as int32 too.
  ajv.addFormat('int32', {
    type: 'number',
    validate: (n: number) => Number.isInteger(n) && n >= INT32_MIN && n <= UINT32_MAX,
  });
  ajv.addFormat('int64', { type: 'number', validate: (n: number) => Number.isInteger(n) });
  ajv.addFormat('double', { type: 'number', validate: (n: number) => Number.isFinite(n) });
  return ajv;
}

const SPEC_DIRS = [join(FIXTURES, 'openapi')];

/** Where a spec file is (the repository keeps a copy of every spec it tests against). */
export function specPath(file: string): string | undefined {
  return SPEC_DIRS.map((d) => join(d, file)).find((p) => existsSync(p));
}

function readSpec(file: string): { components: JsonObject } {
  const p = specPath(file);
  if (p === undefined) throw new Error(`spec ${file} not found in ${SPEC_DIRS.join(' or ')}`);
  return JSON.parse(readFileSync(p, 'utf8')) as { components: JsonObject };
}

/**
 * Where the hand-written v0.0.38 specs contradict what 22.05.8 sends (see the recorded
 * `01-jobs-*.json`): numeric version parts in `meta.Slurm.version`, and slurmdbd's numeric
 * `allocation_nodes`. Each patch sets the schema to what the recording shows.
 */
export const V0038_PATCHES: readonly {
  readonly schema: string;
  readonly path: readonly string[];
  readonly type: string;
}[] = [
  { schema: 'v0.0.38_meta', path: ['Slurm', 'version', 'major'], type: 'integer' },
  { schema: 'v0.0.38_meta', path: ['Slurm', 'version', 'minor'], type: 'integer' },
  { schema: 'v0.0.38_meta', path: ['Slurm', 'version', 'micro'], type: 'integer' },
  { schema: 'dbv0.0.38_meta', path: ['Slurm', 'version', 'major'], type: 'integer' },
  { schema: 'dbv0.0.38_meta', path: ['Slurm', 'version', 'minor'], type: 'integer' },
  { schema: 'dbv0.0.38_meta', path: ['Slurm', 'version', 'micro'], type: 'integer' },
  { schema: 'dbv0.0.38_job', path: ['allocation_nodes'], type: 'integer' },
];

function patched(components: JsonObject): JsonObject {
  const out = structuredClone(components);
  const schemas = out['schemas'] as JsonObject;
  for (const p of V0038_PATCHES) {
    if (!(p.schema in schemas)) continue;
    let node = schemas[p.schema] as JsonObject;
    for (const key of p.path) node = (node['properties'] as JsonObject)[key] as JsonObject;
    node['type'] = p.type;
  }
  return out;
}

/** Every endpoint the fake slurmrestd renders, and its response schema in v0.0.40–v0.0.45. */
const SCHEMA_4X: Readonly<Record<Endpoint, string>> = {
  nodes: 'openapi_nodes_resp',
  jobs: 'openapi_job_info_resp',
  diag: 'openapi_diag_resp',
  partitions: 'openapi_partition_resp',
  licenses: 'openapi_licenses_resp',
  reservations: 'openapi_reservation_resp',
  shares: 'openapi_shares_resp',
  'slurmdb-jobs': 'openapi_slurmdbd_jobs_resp',
  qos: 'openapi_slurmdbd_qos_resp',
  associations: 'openapi_assocs_resp',
};

export const ENDPOINTS = Object.keys(SCHEMA_4X) as readonly Endpoint[];

const SCHEMA_38: Readonly<Record<Endpoint, readonly [string, string]>> = {
  nodes: ['v0.0.38-slurmctld.json', 'v0.0.38_nodes_response'],
  jobs: ['v0.0.38-slurmctld.json', 'v0.0.38_jobs_response'],
  diag: ['v0.0.38-slurmctld.json', 'v0.0.38_diag'],
  partitions: ['v0.0.38-slurmctld.json', 'v0.0.38_partitions_response'],
  licenses: ['v0.0.38-slurmctld.json', 'v0.0.38_licenses'],
  reservations: ['v0.0.38-slurmctld.json', 'v0.0.38_reservations_response'],
  shares: ['v0.0.38-slurmctld.json', 'none: v0.0.38 has no /shares'],
  'slurmdb-jobs': ['v0.0.38-slurmdbd.json', 'dbv0.0.38_job_info'],
  qos: ['v0.0.38-slurmdbd.json', 'none: the v0.0.38 renderer has no /qos'],
  associations: ['v0.0.38-slurmdbd.json', 'none: the v0.0.38 renderer has no /associations'],
};

const ajvs = new Map<string, Ajv>();
const specs = new Map<string, JsonObject>();

function ajvFor(file: string): Ajv {
  let ajv = ajvs.get(file);
  if (ajv === undefined) {
    const components = readSpec(file).components;
    const normalised = normaliseRequired(file.startsWith('v0.0.38') ? patched(components) : components) as JsonObject;
    specs.set(file, normalised);
    ajv = newAjv();
    ajv.addSchema({ $id: file, components: normalised });
    ajvs.set(file, ajv);
  }
  return ajv;
}

function location(version: RenderVersion, endpoint: Endpoint): { file: string; schema: string } {
  if (version === 'v0.0.38') {
    const [file, schema] = SCHEMA_38[endpoint];
    return { file, schema };
  }
  return { file: `${version}.json`, schema: `${version}_${SCHEMA_4X[endpoint]}` };
}

export function validatorFor(version: RenderVersion, endpoint: Endpoint): ValidateFunction {
  const { file, schema } = location(version, endpoint);
  const fn = ajvFor(file).getSchema(`${file}#/components/schemas/${schema}`);
  if (fn === undefined) throw new Error(`no schema ${schema} in ${file}`);
  return fn;
}

export function errorsOf(fn: ValidateFunction): string {
  return (fn.errors ?? [])
    .slice(0, 5)
    .map((e) => `${e.instancePath} ${e.message ?? ''}`)
    .join('; ');
}

function resolve(schemas: JsonObject, s: Json | undefined): JsonObject {
  let cur = s;
  while (isObject(cur) && typeof cur['$ref'] === 'string')
    cur = schemas[(cur['$ref'] as string).split('/').pop() as string];
  return isObject(cur) ? cur : {};
}

/**
 * Members of `value` that the schema does not define, as paths with array indexes folded
 * (`jobs[].power`). Objects whose schema lists no properties are free-form and not descended into.
 */
export function unknownMembers(version: RenderVersion, endpoint: Endpoint, value: unknown): string[] {
  const { file, schema } = location(version, endpoint);
  ajvFor(file);
  const schemas = (specs.get(file) as JsonObject)['schemas'] as JsonObject;
  const found = new Set<string>();
  const walk = (s: JsonObject, v: unknown, where: string): void => {
    if (Array.isArray(v)) {
      const items = resolve(schemas, s['items']);
      for (const e of v) walk(items, e, `${where}[]`);
      return;
    }
    if (v === null || typeof v !== 'object') return;
    const props = s['properties'];
    if (!isObject(props) || Object.keys(props).length === 0) return;
    for (const [k, child] of Object.entries(v)) {
      const at = where === '' ? k : `${where}.${k}`;
      if (!(k in props)) found.add(at);
      else walk(resolve(schemas, props[k]), child, at);
    }
  };
  walk(resolve(schemas, { $ref: `#/components/schemas/${schema}` }), value, '');
  return [...found].sort();
}

/** Every member path of a body, array indexes folded (`jobs[].power`). */
export function memberPaths(value: unknown, where = '', into = new Set<string>()): Set<string> {
  if (Array.isArray(value)) {
    for (const e of value) memberPaths(e, `${where}[]`, into);
  } else if (value !== null && typeof value === 'object') {
    for (const [k, child] of Object.entries(value)) {
      const at = where === '' ? k : `${where}.${k}`;
      into.add(at);
      memberPaths(child, at, into);
    }
  }
  return into;
}

/** Whether a version's schema defines the member at `path` (as memberPaths writes it). */
export function schemaDefines(version: RenderVersion, endpoint: Endpoint, path: string): boolean {
  const { file, schema } = location(version, endpoint);
  ajvFor(file);
  const schemas = (specs.get(file) as JsonObject)['schemas'] as JsonObject;
  let s = resolve(schemas, { $ref: `#/components/schemas/${schema}` });
  for (const part of path.split('.')) {
    const [name, ...arrays] = part.split('[]');
    const props = s['properties'];
    if (!isObject(props) || !((name as string) in props)) return false;
    s = resolve(schemas, props[name as string]);
    for (let i = 0; i < arrays.length; i++) s = resolve(schemas, s['items']);
  }
  return true;
}

/**
 * Members written in one version that another version defines but does not write, as
 * `version: path`: the other direction of unknownMembers, so a version's member list is checked
 * against its spec both ways (as far as the renderer writes a member at all).
 */
export function missingMembers(endpoint: Endpoint, bodies: ReadonlyMap<RenderVersion, readonly unknown[]>): string[] {
  const written = new Map<RenderVersion, Set<string>>();
  for (const [v, list] of bodies) {
    const paths = new Set<string>();
    for (const body of list) memberPaths(body, '', paths);
    written.set(v, paths);
  }
  const all = new Set([...written.values()].flatMap((paths) => [...paths]));
  const missing: string[] = [];
  for (const [v, paths] of written)
    for (const p of all) if (!paths.has(p) && schemaDefines(v, endpoint, p)) missing.push(`${v}: ${p}`);
  return missing.sort();
}
