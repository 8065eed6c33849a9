/**
 * Every built fixture must validate against its version's OpenAPI schema. A fixture that drifts
 * from the spec (a struct where the spec wants a plain integer, a string where it wants an array,
 * an enum value the version does not know) fails here.
 */
import { Ajv } from 'ajv';
import type { ValidateFunction } from 'ajv';
import { describe, expect, it } from 'vitest';
import { BUILT_VERSIONS, built, listFiles, readJson } from './fixtures.js';

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };

/**
 * The generated specs (v0.0.41+) list nested members in `required` as paths, e.g. `job_res`
 * requires `nodes/count`. JSON Schema's `required` names direct members only, so a validator
 * demands a member literally called "nodes/count" and rejects every real `job_resources`.
 * Each such entry is rewritten as what it means: the parent member is required, and the child is
 * required inside it (when the parent is an inline object schema; a shared $ref target is not
 * modified, the entry is dropped instead). Entries without a slash are kept as they are.
 */
function normaliseRequired(node: Json): Json {
  if (Array.isArray(node)) return node.map(normaliseRequired);
  if (node === null || typeof node !== 'object') return node;
  const out: { [k: string]: Json } = {};
  for (const [k, v] of Object.entries(node)) out[k] = normaliseRequired(v);
  const required = out['required'];
  if (!Array.isArray(required)) return out;
  const props = out['properties'];
  const direct = new Set<string>();
  for (const r of required) {
    if (typeof r !== 'string') continue;
    const slash = r.indexOf('/');
    if (slash < 0) {
      direct.add(r);
      continue;
    }
    const parent = r.slice(0, slash);
    const child = r.slice(slash + 1);
    const target = props !== null && typeof props === 'object' && !Array.isArray(props) ? props[parent] : undefined;
    if (
      target === undefined ||
      target === null ||
      typeof target !== 'object' ||
      Array.isArray(target) ||
      '$ref' in target
    )
      continue;
    direct.add(parent);
    const nested = normaliseRequired({ ...target, required: [...asStrings(target['required']), child] }) as {
      [k: string]: Json;
    };
    (props as { [k: string]: Json })[parent] = nested;
  }
  out['required'] = [...direct];
  return out;
}

function asStrings(v: Json | undefined): string[] {
  return Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : [];
}

const INT32_MIN = -(2 ** 31);
// Slurm tags unsigned 32-bit values (priorities, uids) as int32 too.
const UINT32_MAX = 2 ** 32 - 1;

function makeAjv(version: string): Ajv {
  const spec = readJson('openapi', `${version}.json`) as { components: Json };
  const ajv = new Ajv({ strict: false, allErrors: true });
  ajv.addFormat('int32', {
    type: 'number',
    validate: (n: number) => Number.isInteger(n) && n >= INT32_MIN && n <= UINT32_MAX,
  });
  ajv.addFormat('int64', { type: 'number', validate: (n: number) => Number.isInteger(n) });
  ajv.addFormat('double', { type: 'number', validate: (n: number) => Number.isFinite(n) });
  ajv.addSchema({ $id: version, components: normaliseRequired(spec.components) });
  return ajv;
}

const ajvs = new Map<string, Ajv>();
function validator(version: string, schemaName: string): ValidateFunction {
  let ajv = ajvs.get(version);
  if (ajv === undefined) {
    ajv = makeAjv(version);
    ajvs.set(version, ajv);
  }
  const fn = ajv.getSchema(`${version}#/components/schemas/${version}_${schemaName}`);
  if (fn === undefined) throw new Error(`no schema ${schemaName} in ${version}`);
  return fn;
}

const SCHEMA_OF_FILE: Readonly<Record<string, string>> = {
  'nodes.json': 'openapi_nodes_resp',
  'jobs.json': 'openapi_job_info_resp',
  'jobs-error.json': 'openapi_job_info_resp',
  'diag.json': 'openapi_diag_resp',
  'slurmdb-jobs.json': 'openapi_slurmdbd_jobs_resp',
  'qos.json': 'openapi_slurmdbd_qos_resp',
  'associations.json': 'openapi_assocs_resp',
};

function errorsOf(fn: ValidateFunction): string {
  return (fn.errors ?? [])
    .slice(0, 5)
    .map((e) => `${e.instancePath} ${e.message ?? ''}`)
    .join('; ');
}

describe('built fixtures validate against their spec', () => {
  for (const version of BUILT_VERSIONS) {
    const files = listFiles('built', version);
    it(`${version} has a fixture for every endpoint`, () => {
      expect(files).toEqual(Object.keys(SCHEMA_OF_FILE).sort());
    });
    for (const file of files) {
      it(`${version}/${file}`, () => {
        const schema = SCHEMA_OF_FILE[file];
        expect(schema, `no schema mapped for ${file}`).toBeDefined();
        const fn = validator(version, schema as string);
        const ok = fn(built(version, file));
        expect(ok, errorsOf(fn)).toBe(true);
      });
    }
  }
});

describe('the validator is not vacuous', () => {
  it('rejects a v0.0.38-style string node state in v0.0.44', () => {
    const body = structuredClone(built('v0.0.44', 'nodes.json')) as { nodes: { state: unknown }[] };
    (body.nodes[0] as { state: unknown }).state = 'idle';
    expect(validator('v0.0.44', 'openapi_nodes_resp')(body)).toBe(false);
  });

  it('rejects a plain-number time limit where v0.0.41 wants a no-val struct', () => {
    const body = structuredClone(built('v0.0.41', 'jobs.json')) as { jobs: { time_limit: unknown }[] };
    (body.jobs[0] as { time_limit: unknown }).time_limit = 60;
    expect(validator('v0.0.41', 'openapi_job_info_resp')(body)).toBe(false);
  });

  it('rejects a struct average_time in v0.0.40 (plain until v0.0.41)', () => {
    const body = structuredClone(built('v0.0.41', 'diag.json'));
    expect(validator('v0.0.40', 'openapi_diag_resp')(body)).toBe(false);
  });

  it('rejects a node state flag the version does not know', () => {
    const body = structuredClone(built('v0.0.43', 'nodes.json')) as { nodes: { state: string[] }[] };
    (body.nodes[0] as { state: string[] }).state = ['IDLE', 'BLOCKED'];
    expect(validator('v0.0.43', 'openapi_nodes_resp')(body)).toBe(false);
  });

  it('enforces slash-path required members as nested requirements', () => {
    const body = structuredClone(built('v0.0.44', 'jobs.json')) as {
      jobs: { job_resources?: { nodes: Record<string, unknown> } }[];
    };
    const withResources = body.jobs.find((j) => j.job_resources !== undefined);
    expect(withResources).toBeDefined();
    delete withResources?.job_resources?.nodes['count'];
    expect(validator('v0.0.44', 'openapi_job_info_resp')(body)).toBe(false);
  });

  it('rejects a response without its required data member', () => {
    const body = structuredClone(built('v0.0.45', 'nodes.json')) as Record<string, unknown>;
    delete body['nodes'];
    expect(validator('v0.0.45', 'openapi_nodes_resp')(body)).toBe(false);
  });
});

describe('recorded Soperator test data against the specs', () => {
  it('the v0.0.41 node object validates as a v0.0.41 node', () => {
    const fn = validator('v0.0.41', 'node');
    expect(fn(readJson('recorded', 'soperator', 'usual_node_rest.json')), errorsOf(fn)).toBe(true);
  });

  it('the v0.0.41 job object validates as a v0.0.41 job_info', () => {
    const fn = validator('v0.0.41', 'job_info');
    expect(fn(readJson('recorded', 'soperator', '2_node_job.json')), errorsOf(fn)).toBe(true);
  });

  it('the v0.0.44 diag response validates', () => {
    const fn = validator('v0.0.44', 'openapi_diag_resp');
    expect(fn(readJson('recorded', 'soperator', 'sdiag_rest.json')), errorsOf(fn)).toBe(true);
  });
});
