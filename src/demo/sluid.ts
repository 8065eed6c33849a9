/** SLUIDs of fake jobs, as Slurm 26.05 names every job (in slurmctld's and slurmdbd's records). */
import type { FakeJob } from './fake-cluster-types.js';

const CROCKFORD = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';

/**
 * A 26.05 SLUID: `s` + 13 Crockford base32 digits of 64 bits (12-bit cluster, 42-bit submit
 * time in ms, 10-bit sequence). Derived from the job so it is stable across renders.
 */
export function sluidOf(j: FakeJob): string {
  // Every job object of 26.05 names it (twice in slurmdbd's): the BigInt work is done once per job.
  const key = `${j.id}/${j.submitTime}`;
  const known = sluids.get(key);
  if (known !== undefined) return known;
  if (sluids.size >= MAX_SLUIDS) sluids.clear();
  const made = computeSluid(j);
  sluids.set(key, made);
  return made;
}

const sluids = new Map<string, string>();
const MAX_SLUIDS = 200_000;

function computeSluid(j: FakeJob): string {
  let v = (0x2an << 52n) | ((BigInt(j.submitTime) * 1000n) << 10n) | BigInt(j.id & 0x3ff);
  let s = '';
  for (let i = 0; i < 13; i++) {
    s = (CROCKFORD[Number(v & 31n)] as string) + s;
    v >>= 5n;
  }
  return `s${s}`;
}
