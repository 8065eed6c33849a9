/**
 * process_open_fds as the self-monitoring endpoint reads it: in a file of its own, so that no agent
 * of another test opens or closes a descriptor of this process while it counts.
 */
import fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import { countOpenFds } from '../../src/telemetry/selfmon.js';

describe('process_open_fds', () => {
  it('counts the descriptors /proc/self/fd lists, and follows them as they open and close', () => {
    // The listing holds one descriptor on the directory while it reads.
    const listed = (): number => fs.readdirSync('/proc/self/fd').length - 1;
    const before = countOpenFds() as number;
    expect(before).toBe(listed());
    const opened = Array.from({ length: 40 }, () => fs.openSync('/dev/null', 'r'));
    try {
      expect(countOpenFds()).toBe(before + 40);
      expect(countOpenFds()).toBe(listed());
    } finally {
      for (const fd of opened) fs.closeSync(fd);
    }
    expect(countOpenFds()).toBe(before);
  });
});
