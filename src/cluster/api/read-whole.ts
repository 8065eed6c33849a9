/** Responses read whole (small ones: discovery documents, diag, shares, limits) and parsed at once. */
import type { Decoded, SlurmDiag } from '../model.js';
import { parseSlurmJson } from './json/slurm-json.js';
import { readText, type HttpResponse } from '../http/transport.js';
import { decoderFor, type SupportedVersion } from './decode/versions.js';

/** Bodies read whole (openapi, diag) must fit in one V8 string (~512 MiB on Node 20 to 26). */
export const MAX_TEXT_BYTES = 256 * 1024 * 1024;

/** A body read whole, parsed and decoded; text that is not JSON is a decode failure. */
export function parseWhole<T>(text: string, what: string, decode: (body: unknown) => Decoded<T>): Decoded<T> {
  try {
    return decode(parseSlurmJson(text));
  } catch (err) {
    return {
      ok: false,
      kind: 'malformed_json',
      message: `${what}: response is not valid JSON (${(err as Error).message})`,
      errors: [],
      meta: {},
    };
  }
}

/** `/diag/` is one small object: read whole. */
export async function decodeDiagBody(res: HttpResponse, version: SupportedVersion): Promise<Decoded<SlurmDiag>> {
  return parseWhole(await readText(res.body, MAX_TEXT_BYTES), 'diag', decoderFor(version).decodeDiag);
}
