/**
 * Licenses (`GET /slurm/vX/licenses/`): `{LicenseName, Total, Used, Free, Reserved, Remote}` in
 * every version from v0.0.38 (v0.0.40+ add `LastConsumed`, `LastDeficit`, `LastUpdate`, unused here).
 * Never throws.
 */
import type { ItemResult, SlurmLicense } from '../../model.js';
import { NOT_AN_OBJECT } from './common.js';
import { bool, count, isRecord } from '../json/read.js';
import { text } from './states.js';

export function decodeLicense(element: unknown): ItemResult<SlurmLicense> {
  if (!isRecord(element)) return NOT_AN_OBJECT;
  const name = text(element['LicenseName']);
  if (name === undefined) return { ok: false, reason: 'license without a LicenseName' };
  const license: SlurmLicense = {
    name,
    total: count(element['Total']),
    used: count(element['Used']),
    free: count(element['Free']),
    reserved: count(element['Reserved']),
    remote: bool(element['Remote']),
  };
  return { ok: true, item: license };
}
decodeLicense.members = ['LicenseName', 'Total', 'Used', 'Free', 'Reserved', 'Remote'] as const;
