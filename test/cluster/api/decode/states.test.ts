import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  arrayTaskExpression,
  cpuListCount,
  exitCodeFromWaitStatus,
  nodeState,
} from '../../../../src/cluster/api/decode/states.js';
import { expandHostlist } from '../../../../src/cluster/hostlist.js';

describe('arrayTaskExpression', () => {
  it('renders slurmdbd hex bitmaps as task ranges', () => {
    expect(arrayTaskExpression('0xF0')).toBe('4-7');
    expect(arrayTaskExpression('0x5')).toBe('0,2');
    expect(arrayTaskExpression('0x1F')).toBe('0-4');
    expect(arrayTaskExpression('0x100')).toBe('8');
    expect(arrayTaskExpression('0x0')).toBe('');
  });

  it('leaves range expressions alone', () => {
    for (const s of ['4-7%4', '1,3,5-9:2', '3', 'abc', '0xZZ']) expect(arrayTaskExpression(s)).toBe(s);
  });

  it('sets exactly the bits of the bitmap', () => {
    fc.assert(
      fc.property(fc.bigInt({ min: 0n, max: (1n << 200n) - 1n }), (bits) => {
        const expr = arrayTaskExpression(`0x${bits.toString(16)}`);
        // A task range is a hostlist of bare numbers: reuse the expander to list the tasks.
        const tasks = expr === '' ? [] : expandHostlist(`[${expr}]`).map(Number);
        const expected: number[] = [];
        for (let i = 0; i < 200; i++) if ((bits >> BigInt(i)) & 1n) expected.push(i);
        expect(tasks).toEqual(expected);
      }),
    );
  });
});

describe('cpuListCount', () => {
  it('counts CPU ids in a Slurm CPU list', () => {
    expect(cpuListCount('0-1')).toBe(2);
    expect(cpuListCount('0-1,32,40-47')).toBe(11);
    expect(cpuListCount('')).toBe(0);
    expect(cpuListCount(undefined)).toBeUndefined();
    for (const bad of ['a', '3-1', '1,,2', '0-']) expect(cpuListCount(bad), bad).toBeUndefined();
  });
});

describe('exitCodeFromWaitStatus', () => {
  it('splits a raw wait status into exit status or signal', () => {
    expect(exitCodeFromWaitStatus(0)).toEqual({ status: ['SUCCESS'], return_code: 0 });
    expect(exitCodeFromWaitStatus(768)).toEqual({ status: ['ERROR'], return_code: 3 });
    expect(exitCodeFromWaitStatus(9)).toEqual({ status: ['SIGNALED'], signal: 9 });
    expect(exitCodeFromWaitStatus(0x8b)).toEqual({ status: ['SIGNALED'], signal: 11 });
  });
});

describe('nodeState', () => {
  it('takes the first known base word and keeps every other word as a flag', () => {
    expect(nodeState(['DRAIN', 'MIXED'])).toEqual({ base: 'MIXED', flags: ['DRAIN'] });
    expect(nodeState('allocated', ['COMPLETING'])).toEqual({ base: 'ALLOCATED', flags: ['COMPLETING'] });
    expect(nodeState(undefined)).toEqual({ base: 'UNKNOWN', flags: [] });
    expect(nodeState(['FUTURE'])).toEqual({ base: 'FUTURE', flags: [] });
  });
});
