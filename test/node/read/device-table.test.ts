import { describe, expect, it } from 'vitest';
import { formatDeviceTable, parseDeviceTable, tableFdDevice } from '../../../src/node/read/device-table.js';

describe('device table', () => {
  it('reads back what it writes, paths with blanks included; a path it does not list is no device', () => {
    const devices = new Map([
      ['/dev/infiniband/uverbs0', '231:192'],
      ['/chroot/a b/dev/nvidia0', '195:0'],
    ]);
    const table = parseDeviceTable(formatDeviceTable(devices), 'table');
    expect(table).toEqual(devices);
    const of = tableFdDevice(table);
    expect(of('/proc/1/fd/3', '/dev/infiniband/uverbs0')).toBe('231:192');
    expect(of('/proc/1/fd/4', '/dev/infiniband/uverbs1')).toBeUndefined();
  });

  it('names the first bad line: not a device number, no path, a path given two numbers', () => {
    expect(() => parseDeviceTable('# c\n231:192 /dev/x\nuverbs0 231:193\n', 'T')).toThrow(/^T line 3: expected/);
    expect(() => parseDeviceTable('231:192\n', 'T')).toThrow(/^T line 1: expected/);
    expect(() => parseDeviceTable('231:192 dev/x\n', 'T')).toThrow(/^T line 1: expected/);
    expect(() => parseDeviceTable('231:192 /dev/x\n231:193 /dev/x\n', 'T')).toThrow(
      'T line 2: /dev/x has two device numbers (231:192, 231:193)',
    );
  });
});
