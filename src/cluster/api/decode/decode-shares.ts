/**
 * Fairshare (`GET /slurm/vX/shares`, v0.0.40+ = Slurm 23.11+): `{shares: {shares: [...],
 * total_shares}}`, one element per association as sshare lists them. Floats are plain numbers in
 * v0.0.40 and `{set, infinite, number}` structs later (`effective_usage` and the fairshare factor
 * from v0.0.42); both are read. The body is small (one row per association) and read whole.
 * Never throws.
 */
import type { Decoded, ItemResult, SlurmShare } from '../../model.js';
import { NOT_AN_OBJECT } from './common.js';
import { decodeList, notAnObject } from './envelope.js';
import { field, isRecord, num, strList, upperWords } from '../json/read.js';
import { text } from './states.js';

export function decodeShare(element: unknown): ItemResult<SlurmShare> {
  if (!isRecord(element)) return NOT_AN_OBJECT;
  const name = text(element['name']);
  if (name === undefined) return { ok: false, reason: 'share without a name' };
  const fairshare = element['fairshare'];
  const share: SlurmShare = {
    name,
    parent: text(element['parent']) ?? '',
    partition: text(element['partition']) ?? '',
    kind: upperWords(strList(element['type'])).includes('USER') ? 'user' : 'account',
    shares: num(element['shares'], { u32: true }),
    shares_normalized: num(element['shares_normalized']),
    usage: num(element['usage']),
    usage_normalized: num(element['usage_normalized']),
    effective_usage: num(element['effective_usage']),
    fairshare_factor: num(field(fairshare, 'factor')),
    fairshare_level: num(field(fairshare, 'level')),
  };
  return { ok: true, item: share };
}

export function decodeShares(body: unknown): Decoded<SlurmShare> {
  if (!isRecord(body)) return notAnObject(body, 'shares');
  const inner = body['shares'];
  return decodeList({ ...body, shares: isRecord(inner) ? inner['shares'] : inner }, 'shares', decodeShare);
}
