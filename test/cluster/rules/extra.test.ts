/** Pending-reason counts and license pools, from hand-made jobs and slurmrestd license elements. */
import { describe, expect, it } from 'vitest';
import { decodeLicense } from '../../../src/cluster/api/decode-licenses.js';
import { decodeList } from '../../../src/cluster/api/envelope.js';
import { extraFamilies } from '../../../src/cluster/extra.js';
import type { SlurmLicense } from '../../../src/cluster/model.js';
import { job, ok, points, T0 } from './helpers.js';

const at = <T>(value: T) => ({ value, atMs: T0, seq: 1 });

describe('pending reasons', () => {
  it('counts pending jobs by reason and partition, a multi-partition job in each, nothing else', () => {
    const jobs = [
      job('1', ['PENDING'], { state_reason: 'Priority', partition: 'cpu' }),
      job('2', ['PENDING'], { state_reason: 'Priority', partition: 'cpu,gpu' }),
      job('3', ['PENDING', 'REQUEUED'], { state_reason: 'Resources', partition: 'gpu' }),
      job('4', ['RUNNING'], { state_reason: 'None', partition: 'cpu' }),
      job('4', ['RUNNING'], { state_reason: 'None', partition: 'cpu' }),
    ];
    const p = points(extraFamilies({ atMs: T0, jobs: at(jobs) }), 'slurm_jobs_pending_reason');
    const by = Object.fromEntries(p.map((x) => [`${x.attributes.reason}/${x.attributes.partition}`, x.value]));
    expect(by).toEqual({ 'Priority/cpu': 2, 'Priority/gpu': 1, 'Resources/gpu': 1 });
  });

  it('no pending job: the family is there, empty', () => {
    expect(points(extraFamilies({ atMs: T0, jobs: at([job('1', ['RUNNING'])]) }), 'slurm_jobs_pending_reason')).toEqual([]);
  });
});

describe('licenses', () => {
  it('decodes every version\'s element and skips one without a name, keeping the rest', () => {
    const body = {
      licenses: [
        { LicenseName: 'matlab', Total: 10, Used: 3, Free: 5, Reserved: 2, Remote: false, LastConsumed: 3 },
        { Total: 4 },
        { LicenseName: 'ansys', Total: 2, Used: 0, Free: 2, Reserved: 0, Remote: true },
      ],
    };
    const d = decodeList<SlurmLicense>(body, 'licenses', decodeLicense);
    expect(d.ok && d.skipped).toBe(1);
    const f = extraFamilies({ atMs: T0, licenses: at(ok(d)) });
    expect(points(f, 'slurm_license_total').map((x) => [x.attributes.license, x.value])).toEqual([['matlab', 10], ['ansys', 2]]);
    expect(points(f, 'slurm_license_used').map((x) => x.value)).toEqual([3, 0]);
    expect(points(f, 'slurm_license_free').map((x) => x.value)).toEqual([5, 2]);
    expect(points(f, 'slurm_license_reserved').map((x) => x.value)).toEqual([2, 0]);
  });

  it('a count Slurm did not send is absent, not 0; no license sub-collector result, no families', () => {
    const f = extraFamilies({ atMs: T0, licenses: at([{ name: 'x', total: 3 }]) });
    expect(points(f, 'slurm_license_used')).toEqual([]);
    expect(extraFamilies({ atMs: T0 }).map((x) => x.spec.name)).toEqual([]);
  });
});
