import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  HcaCache,
  parseRate,
  parseStateId,
  readHcas,
  saturated,
  UverbsMap,
  verbsByDevice,
} from '../../../src/node/read/hca.js';
import { Problems } from '../../../src/node/read/problems.js';
import { parseCounter } from '../../../src/node/read/roots.js';
import { writeHca } from '../../../src/demo/nodetree.js';
import { asUnprivileged, deny, tmpDir } from '../../support/tmp.js';

function sysfs(): string {
  const dir = path.join(tmpDir(), 'sys');
  writeHca(dir, {
    name: 'mlx5_4',
    uverbs: 1,
    ports: [
      {
        linkLayer: 'InfiniBand',
        rate: '400 Gb/sec (4X NDR)',
        counters: { port_xmit_data: 10, symbol_error: 65535 },
        hwCounters: { packet_seq_err: 7, lifespan: 10 },
      },
      { linkLayer: 'Ethernet', rate: '200 Gb/sec (4X HDR)', state: '1: DOWN', counters: { port_rcv_data: 3 } },
    ],
  });
  return dir;
}

const counterFile = (root: string, port: number, group: string, name: string) =>
  path.join(root, 'class/infiniband/mlx5_4/ports', String(port), group, name);

describe('readHcas', () => {
  it('reads identity, port state and every counter of counters/ and hw_counters/, lifespan excluded', () => {
    const scan = readHcas(sysfs(), new Problems());
    expect(scan.present).toBe(true);
    const [hca] = scan.hcas;
    expect(hca).toMatchObject({
      device: 'mlx5_4',
      boardId: 'MT_0000000223',
      firmware: '28.39.1002',
      hcaType: 'MT4129',
    });
    expect(hca?.ports.map((p) => [p.port, p.linkLayer, p.state, p.rate])).toEqual([
      ['1', 'InfiniBand', '4: ACTIVE', '400 Gb/sec (4X NDR)'],
      ['2', 'Ethernet', '1: DOWN', '200 Gb/sec (4X HDR)'],
    ]);
    expect(Object.fromEntries(hca?.ports[0]?.counters ?? [])).toEqual({
      port_xmit_data: 10n,
      symbol_error: 65535n,
      packet_seq_err: 7n,
    });
  });

  it('treats N/A, unsupported and unreadable counters as absent, never 0, and counts garbage as malformed', () => {
    const root = sysfs();
    fs.writeFileSync(counterFile(root, 1, 'counters', 'port_rcv_data'), 'N/A (no PMA)\n');
    fs.writeFileSync(counterFile(root, 1, 'counters', 'port_rcv_packets'), 'garbage\n');
    fs.writeFileSync(counterFile(root, 1, 'counters', 'port_xmit_packets'), '\n');
    fs.writeFileSync(counterFile(root, 1, 'hw_counters', 'out_of_buffer'), '12\n');
    deny(counterFile(root, 1, 'hw_counters', 'out_of_buffer'));
    const problems = new Problems();
    const counters = asUnprivileged(() => readHcas(root, problems)).hcas[0]?.ports[0]?.counters;
    expect(counters?.has('port_rcv_data')).toBe(false);
    expect(counters?.has('port_rcv_packets')).toBe(false);
    expect(counters?.has('port_xmit_packets')).toBe(false);
    expect(counters?.has('out_of_buffer')).toBe(false);
    expect(counters?.get('port_xmit_data')).toBe(10n);
    const kinds = problems
      .list()
      .map((p) => `${p.source}/${p.kind}:${p.count}`)
      .sort();
    expect(kinds).toEqual(['sysfs/denied:1', 'sysfs/malformed:2']);
  });

  it('keeps counters beyond 2^53 exact', () => {
    const root = sysfs();
    fs.writeFileSync(counterFile(root, 1, 'counters', 'port_xmit_data'), '18446744073709551615\n');
    expect(readHcas(root, new Problems()).hcas[0]?.ports[0]?.counters.get('port_xmit_data')).toBe(
      18446744073709551615n,
    );
  });

  it('keeps counters_ext of old kernels under their own names, never in place of counters/', () => {
    const root = sysfs();
    fs.mkdirSync(path.join(root, 'class/infiniband/mlx5_4/ports/1/counters_ext'));
    fs.writeFileSync(counterFile(root, 1, 'counters_ext', 'port_xmit_data_64'), '5000000000\n');
    fs.writeFileSync(counterFile(root, 1, 'counters_ext', 'symbol_error'), '3\n');
    const counters = readHcas(root, new Problems()).hcas[0]?.ports[0]?.counters;
    expect(counters?.get('port_xmit_data')).toBe(10n);
    expect(counters?.get('port_xmit_data_64')).toBe(5000000000n);
    expect(counters?.get('symbol_error')).toBe(65535n);
  });

  it('reads state, physical state and rate as numbers', () => {
    const root = sysfs();
    fs.writeFileSync(path.join(root, 'class/infiniband/mlx5_4/ports/2/rate'), '2.5 Gb/sec (1X SDR)\n');
    const problems = new Problems();
    const ports = readHcas(root, problems).hcas[0]?.ports;
    expect(ports?.map((p) => [p.stateId, p.physStateId, p.rateBytesPerSecond])).toEqual([
      [4, 5, 50_000_000_000],
      [1, 3, 312_500_000],
    ]);
    expect(problems.list()).toEqual([]);
  });

  it('counts a state or rate it cannot read as malformed, and exports no number for it', () => {
    const root = sysfs();
    fs.writeFileSync(path.join(root, 'class/infiniband/mlx5_4/ports/1/state'), 'ACTIVE\n');
    fs.writeFileSync(path.join(root, 'class/infiniband/mlx5_4/ports/1/rate'), 'fast\n');
    const problems = new Problems();
    const port = readHcas(root, problems).hcas[0]?.ports[0];
    expect([port?.stateId, port?.rateBytesPerSecond]).toEqual([undefined, undefined]);
    expect(problems.list().map((p) => `${p.kind}:${p.count}`)).toEqual(['malformed:2']);
  });

  it('exports only decimal port directories and counts the others as malformed', () => {
    const root = sysfs();
    for (const name of ['abc', '-1', '0x10', '01', '256'])
      fs.mkdirSync(path.join(root, 'class/infiniband/mlx5_4/ports', name));
    const problems = new Problems();
    expect(readHcas(root, problems).hcas[0]?.ports.map((p) => p.port)).toEqual(['1', '2']);
    expect(problems.list()).toMatchObject([{ source: 'sysfs', kind: 'malformed', count: 5 }]);
  });

  it('decodes text attributes as UTF-8', () => {
    const root = sysfs();
    fs.writeFileSync(path.join(root, 'class/infiniband/mlx5_4/fw_ver'), '28.39.1002-ü\n');
    fs.writeFileSync(path.join(root, 'class/infiniband/mlx5_4/board_id'), 'Ωboard\n');
    expect(readHcas(root, new Problems()).hcas[0]).toMatchObject({ firmware: '28.39.1002-ü', boardId: 'Ωboard' });
  });

  it('fails the scan, instead of reporting no HCA, when class/infiniband cannot be listed', () => {
    const root = sysfs();
    deny(path.join(root, 'class/infiniband'));
    const problems = new Problems();
    const scan = asUnprivileged(() => readHcas(root, problems));
    expect(scan).toMatchObject({
      present: true,
      hcas: [],
      failure: expect.stringMatching(/class\/infiniband.*EACCES/),
    });
    expect(problems.list()).toMatchObject([{ source: 'sysfs', kind: 'denied', count: 1 }]);
  });

  it('says plainly when the node has no InfiniBand class at all', () => {
    const problems = new Problems();
    expect(readHcas(path.join(tmpDir(), 'sys'), problems)).toEqual({ present: false, hcas: [] });
    expect(problems.list()).toEqual([]);
  });
});

describe('UverbsMap', () => {
  it('resolves uverbs through sysfs, never by number', () => {
    const root = sysfs();
    const map = new UverbsMap(root, new Problems());
    expect(map.device('uverbs1')).toBe('mlx5_4');
    expect(map.device('uverbs4')).toBeUndefined();
  });
});

describe('counter parsing and widths', () => {
  it('rejects values that do not fit 64 bits and anything not decimal', () => {
    expect(parseCounter('18446744073709551616').ok).toBe(false);
    expect(parseCounter('-1').ok).toBe(false);
    expect(parseCounter('0x10').ok).toBe(false);
    expect(parseCounter(' 42\n')).toEqual({ ok: true, value: 42n });
  });

  it('knows which PMA counters saturate, and at what value', () => {
    expect(saturated('symbol_error', 65535n)).toBe(true);
    expect(saturated('symbol_error', 65534n)).toBe(false);
    expect(saturated('link_downed', 255n)).toBe(true);
    expect(saturated('local_link_integrity_errors', 15n)).toBe(true);
    expect(saturated('port_xmit_wait', 4294967295n)).toBe(true);
    expect(saturated('port_xmit_data', 4294967295n)).toBe(false);
  });

  it('turns state ids and rates into numbers: Gb/s × 125,000,000 bytes/s', () => {
    expect(parseStateId('4: ACTIVE')).toBe(4);
    expect(parseStateId('5: LinkUp\n')).toBe(5);
    expect(parseStateId('ACTIVE')).toBeUndefined();
    expect(parseRate('200 Gb/sec (4X HDR)')).toBe(25_000_000_000);
    expect(parseRate('2.5 Gb/sec (1X SDR)')).toBe(312_500_000);
    expect(parseRate('14 Gb/sec (1X FDR)')).toBe(1_750_000_000);
    expect(parseRate('0 GB/sec')).toBe(0);
    expect(parseRate('Gb/sec')).toBeUndefined();
    expect(parseRate('1e3 Gb/sec')).toBeUndefined();
  });
});

describe('HcaCache', () => {
  const xmit = (scan: ReturnType<typeof readHcas>) => scan.hcas[0]?.ports[0]?.counters.get('port_xmit_data');

  for (const hold of [0, 2048])
    it(`keeps what does not change and reads what does (${hold ? 'files kept open' : 'files opened each cycle'})`, () => {
      const root = sysfs();
      const cache = new HcaCache(hold);
      expect(xmit(readHcas(root, new Problems(), cache))).toBe(10n);
      // Rewritten in place, as sysfs shows a new value: read again.
      fs.writeFileSync(counterFile(root, 1, 'counters', 'port_xmit_data'), '11\n');
      fs.writeFileSync(path.join(root, 'class/infiniband/mlx5_4/ports/1/state'), '1: DOWN\n');
      const second = readHcas(root, new Problems(), cache);
      expect(xmit(second)).toBe(11n);
      expect(second.hcas[0]?.ports[0]?.state).toBe('1: DOWN');
      // A counter file that goes and one that comes (the directory changes): seen at once.
      fs.rmSync(counterFile(root, 1, 'hw_counters', 'packet_seq_err'));
      fs.writeFileSync(counterFile(root, 1, 'hw_counters', 'out_of_sequence'), '5\n');
      const third = readHcas(root, new Problems(), cache).hcas[0]?.ports[0]?.counters;
      expect(third?.has('packet_seq_err')).toBe(false);
      expect(third?.get('out_of_sequence')).toBe(5n);
      cache.close();
    });

  it('reads the identity files again when the device is registered again (a new directory)', () => {
    const root = sysfs();
    const cache = new HcaCache(2048);
    expect(readHcas(root, new Problems(), cache).hcas[0]?.firmware).toBe('28.39.1002');
    const dev = path.join(root, 'class/infiniband/mlx5_4');
    fs.renameSync(dev, `${dev}.old`);
    fs.cpSync(`${dev}.old`, dev, { recursive: true });
    fs.rmSync(`${dev}.old`, { recursive: true });
    fs.writeFileSync(path.join(dev, 'fw_ver'), '28.40.1000\n');
    fs.writeFileSync(counterFile(root, 1, 'counters', 'port_xmit_data'), '99\n');
    const scan = readHcas(root, new Problems(), cache);
    expect(scan.hcas[0]?.firmware).toBe('28.40.1000');
    expect(xmit(scan)).toBe(99n);
    cache.close();
  });
});

describe('verbsByDevice', () => {
  it('maps each uverbs device number to its name, and names what it cannot read as a gap', () => {
    const root = sysfs();
    const verbs = path.join(root, 'class/infiniband_verbs');
    fs.mkdirSync(path.join(verbs, 'uverbs7'));
    fs.writeFileSync(path.join(verbs, 'uverbs7', 'dev'), 'not a number\n');
    const problems = new Problems();
    const v = verbsByDevice(root, problems);
    expect(Object.fromEntries(v.byDevice)).toEqual({ '231:193': 'uverbs1' });
    expect(v.gaps).toEqual(['uverbs7: device number unknown (malformed dev)']);
    expect(problems.list()).toEqual([expect.objectContaining({ source: 'sysfs', kind: 'malformed' })]);
  });
});
