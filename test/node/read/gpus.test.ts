import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  GpuCache,
  parseBusId,
  parseCapability,
  parseMajors,
  readGpus,
  type DeviceRole,
  type GpuInventory,
} from '../../../src/node/read/gpus.js';
import { Problems } from '../../../src/node/read/problems.js';
import {
  capabilityText,
  migCapsMinor,
  nvidiaDevices,
  standInGpus,
  writeNvidia,
  writeTree,
  type NvidiaSpec,
} from '../../../src/demo/nodetree.js';
import { asUnprivileged, deny, tmpDir } from '../../support/tmp.js';

/**
 * The oracle's role of a device number (an fd's `major:minor`) in an inventory; undefined when it is
 * no NVIDIA device: a GPU or MIG unit by its number, else what the driver's major says.
 */
function deviceRole(inv: GpuInventory, dev: string): DeviceRole | undefined {
  const known = inv.byDevice.get(dev);
  if (known) return known;
  const major = Number(dev.slice(0, dev.indexOf(':')));
  const driver = inv.majors.noGpu.get(major);
  if (driver !== undefined) return { kind: 'no-gpu', name: driver };
  if (major === inv.majors.nvidia) return { kind: 'unknown', name: `nvidia ${dev}` };
  if (major === inv.majors.caps) return { kind: 'unknown', name: `nvidia-caps ${dev}` };
  return undefined;
}

const H200 = path.resolve('fixtures/node/nvidia/h200');
const H200_INFO = path.join(H200, 'proc/driver/nvidia/gpus/0000:00:06.0/information');

/** The recorded H200 node as a procfs: its information file, its /proc/devices lines, gpu0/mig/ empty. */
function recordedProcfs(): string {
  const procfs = path.join(tmpDir(), 'proc');
  const gpuDir = path.join(procfs, 'driver/nvidia/gpus/0000:00:06.0');
  fs.mkdirSync(gpuDir, { recursive: true });
  fs.copyFileSync(H200_INFO, path.join(gpuDir, 'information'));
  fs.mkdirSync(path.join(procfs, 'driver/nvidia/capabilities/gpu0/mig'), { recursive: true });
  const excerpt = fs.readFileSync(path.join(H200, 'proc-devices.excerpt'), 'utf8');
  fs.writeFileSync(path.join(procfs, 'devices'), `Character devices:\n${excerpt}\nBlock devices:\n  8 sd\n`);
  return procfs;
}

function synthetic(spec: NvidiaSpec): string {
  const procfs = path.join(tmpDir(), 'proc');
  writeNvidia(procfs, spec);
  return procfs;
}

const roleName = (inv: GpuInventory, dev: string): string | undefined => {
  const r = deviceRole(inv, dev);
  if (r === undefined) return undefined;
  if (r.kind === 'no-gpu' || r.kind === 'unknown') return `${r.kind} ${r.name}`;
  if (r.kind === 'gpu') return `gpu ${r.gpu.minor}`;
  if (r.kind === 'gpu-instance') return `gi ${r.gpu.minor}/${r.gpuInstance.gi}`;
  return `ci ${r.gpu.minor}/${r.gpuInstance.gi}/${r.computeInstance.ci}`;
};

describe('readGpus on the recorded H200 node', () => {
  it('gives the UUID, bus id in both forms, minor and model the driver wrote', () => {
    const problems = new Problems();
    const inv = readGpus(recordedProcfs(), problems);
    expect(problems.list()).toEqual([]);
    expect(inv.present).toBe(true);
    expect(inv.gpus).toEqual([
      {
        uuid: 'GPU-9189792d-c677-0906-c981-9aa36eee3801',
        busId: '0000:00:06.0',
        busIdDcgm: '00000000:00:06.0',
        minor: 0,
        device: '195:0',
        model: 'NVIDIA H200',
        excluded: false,
        gpuInstances: [],
      },
    ]);
  });

  it("matches nvidia-smi's compute-apps line for the same process (UUID and NVML's bus id)", () => {
    const [, row] = fs.readFileSync(path.join(H200, 'nvidia-smi-compute-apps.csv'), 'utf8').trim().split('\n');
    const [, uuid, busId] = (row as string).split(', ');
    const gpu = readGpus(recordedProcfs(), new Problems()).gpus[0];
    expect(gpu?.uuid).toBe(uuid);
    expect(gpu?.busIdDcgm).toBe(busId);
  });

  it('names every device the recorded CUDA process held: one GPU, the rest no GPU', () => {
    const inv = readGpus(recordedProcfs(), new Problems());
    expect(inv.majors).toMatchObject({ nvidia: 195, caps: 241 });
    // The recorded fds, device numbers as stat printed them in hex.
    const held = fs
      .readFileSync(path.join(H200, 'cuda-process-fds.txt'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => l.trim().split(/\s+/))
      .filter((f) => (f[3] as string).startsWith('/dev/nvidia'))
      .map((f) => {
        const [maj, min] = (f[4] as string).split(':');
        return [f[3], roleName(inv, `${parseInt(maj as string, 16)}:${parseInt(min as string, 16)}`)];
      });
    expect(held).toEqual([
      ['/dev/nvidia0', 'gpu 0'],
      // The recording has no capabilities/mig files; 241:1 and 241:2 are caps nobody in this tree names.
      ['/dev/nvidia-caps/nvidia-cap1', 'unknown nvidia-caps 241:1'],
      ['/dev/nvidia-caps/nvidia-cap2', 'unknown nvidia-caps 241:2'],
      ['/dev/nvidiactl', 'no-gpu nvidiactl'],
      ['/dev/nvidia-uvm', 'no-gpu nvidia-uvm'],
    ]);
    expect(roleName(inv, '231:192')).toBeUndefined();
  });
});

describe('readGpus on stand-in trees', () => {
  it('reads 8 GPUs in minor order with the node-wide caps as no GPU', () => {
    const problems = new Problems();
    const inv = readGpus(synthetic({ gpus: standInGpus(8).reverse() }), problems);
    expect(problems.list()).toEqual([]);
    expect(inv.gpus.map((g) => [g.minor, g.device, g.busId, g.busIdDcgm])).toEqual([
      [0, '195:0', '0000:18:00.0', '00000000:18:00.0'],
      [1, '195:1', '0000:2a:00.0', '00000000:2A:00.0'],
      [2, '195:2', '0000:3a:00.0', '00000000:3A:00.0'],
      [3, '195:3', '0000:5d:00.0', '00000000:5D:00.0'],
      [4, '195:4', '0000:9a:00.0', '00000000:9A:00.0'],
      [5, '195:5', '0000:ab:00.0', '00000000:AB:00.0'],
      [6, '195:6', '0000:ba:00.0', '00000000:BA:00.0'],
      [7, '195:7', '0000:db:00.0', '00000000:DB:00.0'],
    ]);
    expect(new Set(inv.gpus.map((g) => g.uuid)).size).toBe(8);
    expect(roleName(inv, '241:1')).toBe('no-gpu nvidia-caps mig/config');
    expect(roleName(inv, '241:2')).toBe('no-gpu nvidia-caps mig/monitor');
    expect(roleName(inv, '195:254')).toBe('no-gpu nvidia-modeset');
    expect(roleName(inv, '238:1')).toBe('no-gpu nvidia-uvm');
    expect(roleName(inv, '242:0')).toBe('no-gpu nvidia-caps-imex-channels');
    expect(roleName(inv, '195:8')).toBe('unknown nvidia 195:8');
  });

  it('reads MIG GPU and compute instances with their caps device numbers', () => {
    const [g0, g1] = standInGpus(2);
    const spec: NvidiaSpec = {
      gpus: [
        {
          ...g0!,
          mig: [
            { gi: 1, cis: [0] },
            { gi: 2, cis: [0, 1] },
          ],
        },
        g1!,
      ],
      majors: { caps: 509 },
    };
    const problems = new Problems();
    const inv = readGpus(synthetic(spec), problems);
    expect(problems.list()).toEqual([]);
    expect(inv.gpus[0]?.gpuInstances).toEqual([
      { gi: 1, capsMinor: 12, device: '509:12', computeInstances: [{ ci: 0, capsMinor: 13, device: '509:13' }] },
      {
        gi: 2,
        capsMinor: 21,
        device: '509:21',
        computeInstances: [
          { ci: 0, capsMinor: 22, device: '509:22' },
          { ci: 1, capsMinor: 23, device: '509:23' },
        ],
      },
    ]);
    expect(inv.gpus[1]?.gpuInstances).toEqual([]);
    expect(roleName(inv, '509:12')).toBe('gi 0/1');
    expect(roleName(inv, '509:23')).toBe('ci 0/2/1');
    expect(roleName(inv, '509:1')).toBe('no-gpu nvidia-caps mig/config');
    // Every device number the stand-in's device nodes carry is named by the inventory.
    for (const [target, dev] of nvidiaDevices(spec)) expect(deviceRole(inv, dev)?.kind, target).not.toBe('unknown');
  });

  it("numbers MIG caps minors as the driver's table does", () => {
    expect([migCapsMinor(0, 1), migCapsMinor(0, 1, 0), migCapsMinor(0, 2, 0), migCapsMinor(0, 3, 0)]).toEqual([
      12, 13, 22, 31,
    ]);
    expect(migCapsMinor(1, 0)).toBe(3 + 135);
  });

  it('reads the excluded flag and the IMEX capability when the driver writes them', () => {
    const [g0] = standInGpus(1);
    const procfs = synthetic({ gpus: [{ ...g0!, excluded: true }] });
    fs.writeFileSync(path.join(procfs, 'driver/nvidia/capabilities/fabric-imex-mgmt'), capabilityText(4400));
    const inv = readGpus(procfs, new Problems());
    expect(inv.gpus[0]?.excluded).toBe(true);
    expect(roleName(inv, '241:4400')).toBe('no-gpu nvidia-caps fabric-imex-mgmt');
  });

  it('is written by writeTree with the fd device numbers of the stand-ins', () => {
    const roots = writeTree(tmpDir(), {
      layout: 'v2',
      hcas: [],
      jobs: [],
      others: [],
      nvidia: { gpus: standInGpus(4) },
    });
    expect(readGpus(roots.procfs, new Problems()).gpus).toHaveLength(4);
    expect(roots.devices.get('/dev/nvidia3')).toBe('195:3');
    expect(roots.devices.get('/dev/nvidia-uvm')).toBe('238:0');
  });
});

describe('readGpus: a node without the driver, and bad files', () => {
  it('is empty with a one-line reason when /proc/driver/nvidia does not exist', () => {
    const problems = new Problems();
    const inv = readGpus(path.join(tmpDir(), 'proc'), problems);
    expect(inv.present).toBe(false);
    expect(inv.gpus).toEqual([]);
    expect(inv.failure).toBeUndefined();
    expect(inv.reason).toMatch(
      /^no NVIDIA driver loaded \(.*\/proc\/driver\/nvidia does not exist\): no GPU on this node$/,
    );
    expect(problems.total()).toBe(0);
  });

  it('counts a malformed information file and keeps the other GPUs', () => {
    const procfs = synthetic({ gpus: standInGpus(3) });
    const info = (bus: string) => path.join(procfs, 'driver/nvidia/gpus', bus, 'information');
    fs.writeFileSync(info('0000:2a:00.0'), 'Model: \t\t NVIDIA H200\nGPU UUID: \t not-a-uuid\nDevice Minor: \t 1\n');
    fs.writeFileSync(
      info('0000:3a:00.0'),
      fs.readFileSync(info('0000:3a:00.0'), 'utf8').replace(/Device Minor:.*\n/, ''),
    );
    const problems = new Problems();
    const inv = readGpus(procfs, problems);
    expect(inv.gpus.map((g) => g.minor)).toEqual([0]);
    expect(problems.list()).toEqual([
      expect.objectContaining({
        source: 'proc',
        kind: 'malformed',
        count: 2,
        example: expect.stringMatching(/GPU UUID/),
      }),
    ]);
  });

  it('counts a malformed MIG access file and a GPU directory with no information file (gone: not counted)', () => {
    const [g0] = standInGpus(1);
    const procfs = synthetic({
      gpus: [
        {
          ...g0!,
          mig: [
            { gi: 1, cis: [0] },
            { gi: 2, cis: [] },
          ],
        },
      ],
    });
    fs.writeFileSync(path.join(procfs, 'driver/nvidia/capabilities/gpu0/mig/gi2/access'), 'DeviceFileMode: 292\n');
    fs.mkdirSync(path.join(procfs, 'driver/nvidia/gpus/0000:99:00.0'));
    const problems = new Problems();
    const inv = readGpus(procfs, problems);
    expect(inv.gpus[0]?.gpuInstances.map((i) => i.gi)).toEqual([1]);
    expect(problems.list()).toEqual([expect.objectContaining({ kind: 'malformed', count: 1 })]);
  });

  it('counts an unreadable information file as denied', () => {
    const procfs = synthetic({ gpus: standInGpus(2) });
    deny(path.join(procfs, 'driver/nvidia/gpus/0000:18:00.0/information'));
    const problems = new Problems();
    const inv = asUnprivileged(() => readGpus(procfs, problems));
    expect(inv.gpus.map((g) => g.minor)).toEqual([1]);
    expect(problems.list()).toEqual([expect.objectContaining({ source: 'proc', kind: 'denied', count: 1 })]);
  });

  it('reports a driver directory it cannot read as a failure, not as no driver', () => {
    const procfs = synthetic({ gpus: standInGpus(1) });
    deny(path.join(procfs, 'driver/nvidia'));
    const problems = new Problems();
    const inv = asUnprivileged(() => readGpus(procfs, problems));
    expect(inv.failure).toBeDefined();
    expect(inv.reason).toMatch(/^cannot list /);
    expect(problems.list()).toEqual([expect.objectContaining({ kind: 'denied' })]);
  });
});

describe('GpuCache: parses again only when the set changes', () => {
  it('keeps a steady node from parsing every cycle and sees GPUs and MIG instances come and go', () => {
    const gpus = standInGpus(8);
    const procfs = synthetic({ gpus: gpus.slice(0, 7) });
    const cache = new GpuCache();
    const read = (): GpuInventory => readGpus(procfs, new Problems(), cache);
    const first = read();
    for (let i = 0; i < 5; i++) expect(read()).toBe(first);
    expect(cache.parses).toBe(1);

    writeNvidia(procfs, { gpus });
    expect(read().gpus).toHaveLength(8);
    expect(cache.parses).toBe(2);

    const gi = path.join(procfs, 'driver/nvidia/capabilities/gpu3/mig/gi1');
    fs.mkdirSync(path.join(gi, 'ci0'), { recursive: true });
    fs.writeFileSync(path.join(gi, 'access'), capabilityText(migCapsMinor(3, 1)));
    fs.writeFileSync(path.join(gi, 'ci0', 'access'), capabilityText(migCapsMinor(3, 1, 0)));
    expect(read().gpus[3]?.gpuInstances.map((i) => i.computeInstances.length)).toEqual([1]);
    expect(cache.parses).toBe(3);
    read();
    expect(cache.parses).toBe(3);

    fs.rmSync(gi, { recursive: true });
    fs.rmSync(path.join(procfs, 'driver/nvidia/gpus', gpus[7]!.busId), { recursive: true });
    const after = read();
    expect(after.gpus).toHaveLength(7);
    expect(after.gpus[3]?.gpuInstances).toEqual([]);
    expect(cache.parses).toBe(4);
  });

  it('parses again after a problem until the files read clean', () => {
    const procfs = synthetic({ gpus: standInGpus(2) });
    const info = path.join(procfs, 'driver/nvidia/gpus/0000:18:00.0/information');
    const good = fs.readFileSync(info, 'utf8');
    fs.writeFileSync(info, 'garbage\n');
    const cache = new GpuCache();
    expect(readGpus(procfs, new Problems(), cache).gpus).toHaveLength(1);
    fs.writeFileSync(info, good);
    expect(readGpus(procfs, new Problems(), cache).gpus).toHaveLength(2);
    readGpus(procfs, new Problems(), cache);
    expect(cache.parses).toBe(2);
  });

  it('parses again when a driver major changes (nvidia-uvm reloaded)', () => {
    const procfs = synthetic({ gpus: standInGpus(1) });
    const cache = new GpuCache();
    expect(deviceRole(readGpus(procfs, new Problems(), cache), '238:0')?.kind).toBe('no-gpu');
    writeNvidia(procfs, { gpus: standInGpus(1), majors: { uvm: 500 } });
    const inv = readGpus(procfs, new Problems(), cache);
    expect(deviceRole(inv, '500:0')?.kind).toBe('no-gpu');
    expect(deviceRole(inv, '238:0')).toBeUndefined();
  });
});

describe('parsers', () => {
  it('normalises bus ids written in any form', () => {
    const want = { busId: '0000:3f:00.0', busIdDcgm: '00000000:3F:00.0' };
    expect(parseBusId('0000:3f:00.0')).toEqual(want);
    expect(parseBusId('00000000:3F:00.0')).toEqual(want);
    expect(parseBusId('0001:c1:00.1')).toEqual({ busId: '0001:c1:00.1', busIdDcgm: '00000001:C1:00.1' });
    expect(parseBusId('3f:00.0')).toBeUndefined();
    expect(parseBusId('0000:3f:00.8')).toBeUndefined();
  });

  it('reads majors only from the character devices section', () => {
    const m = parseMajors(
      'Character devices:\n195 nvidia-frontend\n510 nvidia-uvm\n511 nvidia-caps\n\nBlock devices:\n 12 nvidia-nvlink\n',
    );
    expect(m).toEqual({ nvidia: 195, caps: 511, noGpu: new Map([[510, 'nvidia-uvm']]) });
  });

  it('reads DeviceFileMinor as the driver writes it', () => {
    expect(parseCapability(capabilityText(22))).toBe(22);
    expect(parseCapability('DeviceFileMinor: x\n')).toMatch(/no DeviceFileMinor/);
  });
});
