import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { contextsOf, parseContexts, sharesPidSpace } from '../../../src/node/read/rdma-contexts.js';
import { tmpDir } from '../../support/tmp.js';

/** Shapes as iproute2 6.1's `rdma -j` printed them on Debian 12's kernel with Soft-RoCE (fixtures/node/rxe). */
const TOTALS = fs.readFileSync('fixtures/node/rxe/rdma/resource.s1.json', 'utf8');
const ctx = (...entries: [string, number | undefined][]) =>
  JSON.stringify(
    entries.map(([ifname, pid], i) => ({
      ifindex: Number(ifname.slice(3)),
      ifname,
      ctxn: i,
      ...(pid === undefined ? {} : { pid, comm: 'ibv_rc_pingpong' }),
    })),
  );
const ALL_LISTED = ctx(['rxe0', 410], ['rxe1', 420], ['rxe1', 430], ['rxe2', 440]);

describe('the kernel list of verbs contexts', () => {
  it('says per process which HCAs it holds a context on, when every counted context is listed', () => {
    const r = parseContexts(ALL_LISTED, TOTALS);
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(r.value.hidden).toEqual(new Set());
    expect(contextsOf(r.value, 420, () => undefined)).toEqual({ held: ['rxe1'], unknownOn: [] });
    expect(contextsOf(r.value, 999, () => undefined)).toEqual({ held: [], unknownOn: [] });
  });

  it('maps a context a thread made to its process', () => {
    const r = parseContexts(ALL_LISTED, TOTALS);
    if (!r.ok) throw new Error(r.detail);
    expect(contextsOf(r.value, 7, (id) => (id === 440 ? 7 : undefined))).toEqual({ held: ['rxe2'], unknownOn: [] });
  });

  it('leaves a device unknown where the totals count more contexts than the list names processes for', () => {
    // rxe1 counts 2 contexts; the list names one (its creator exited, or lives in another PID namespace)
    const r = parseContexts(ctx(['rxe0', 410], ['rxe1', 420], ['rxe2', 440]), TOTALS);
    if (!r.ok) throw new Error(r.detail);
    expect(r.value.hidden).toEqual(new Set(['rxe1']));
    expect(contextsOf(r.value, 999, () => undefined)).toEqual({ held: [], unknownOn: ['rxe1'] });
    expect(contextsOf(r.value, 420, () => undefined)).toEqual({ held: ['rxe1'], unknownOn: [] });
    // an entry without a pid (as the kernel would print one it cannot name) is no one's
    const noPid = parseContexts(ctx(['rxe0', 410], ['rxe1', 420], ['rxe1', undefined], ['rxe2', 440]), TOTALS);
    if (!noPid.ok) throw new Error(noPid.detail);
    expect(noPid.value.hidden).toEqual(new Set(['rxe1']));
  });

  it('gives no evidence for output that is not the recorded shape', () => {
    for (const [list, totals] of [
      ['not json', TOTALS],
      ['{}', TOTALS],
      [ALL_LISTED, '[{"ifname":"rxe0"}]'],
      ['[{"pid":4}]', TOTALS],
    ])
      expect(parseContexts(list as string, totals as string).ok, `${list} / ${totals}`).toBe(false);
  });

  it('is used only with a procfs whose PIDs are the agent’s own', () => {
    expect(sharesPidSpace('/proc')).toBe(true);
    const fake = tmpDir();
    fs.symlinkSync(String(process.pid + 1), path.join(fake, 'self'));
    expect(sharesPidSpace(fake)).toBe(false);
    expect(sharesPidSpace(path.join(fake, 'none'))).toBe(false);
  });
});
