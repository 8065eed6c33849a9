import { describe, expect, it } from 'vitest';
import { formatRate, formatSi, sparkline, sparkPath } from '../../src/telemetry/page.js';

const SIZE = { width: 100, height: 24 };

describe('sparkline paths', () => {
  it('draw a flat series at 0 along the bottom, any other flat series along the top', () => {
    expect(sparkPath([0, 0, 0], SIZE)).toBe('M0 22 L50 22 L100 22');
    expect(sparkPath([7, 7, 7], SIZE)).toBe('M0 2 L50 2 L100 2');
  });

  it('draw a rising series from the bottom to the top, scaled from 0', () => {
    expect(sparkPath([0, 5, 10], SIZE)).toBe('M0 22 L50 12 L100 2');
    expect(sparkPath([5, 10], SIZE)).toBe('M0 12 L100 2');
  });

  it('draw a single point as a dot at the right end', () => {
    expect(sparkPath([3], SIZE)).toBe('M100 2 h0');
  });

  it('break the line where a value is unknown, with a dot for a point left alone', () => {
    expect(sparkPath([1, 2, undefined, 2, undefined, 4, 4], { width: 60, height: 24 })).toBe(
      'M0 17 L10 12 M30 12 h0 M50 2 L60 2',
    );
  });

  it('are empty with no known value', () => {
    expect(sparkPath([], SIZE)).toBe('');
    expect(sparkPath([undefined, Number.NaN], SIZE)).toBe('');
  });

  it('come inside an inline SVG with an escaped label, and no path when there is nothing to draw', () => {
    const svg = sparkline([1, 2], '<b>"x"</b>', SIZE);
    expect(svg).toMatch(
      /^<svg class="spark" width="100" height="24" viewBox="0 0 100 24" role="img" aria-label="&#60;b&#62;&#34;x&#34;&#60;\/b&#62;"><title>&#60;b&#62;/,
    );
    expect(svg).toContain('<path d="M0 12 L100 2"');
    expect(sparkline([], 'empty', SIZE)).not.toContain('<path');
  });
});

describe('rates and sizes for people', () => {
  it('use SI prefixes with three significant digits', () => {
    expect(formatRate(1_234_567_890, 'B')).toBe('1.23 GB/s');
    expect(formatRate(999, 'B')).toBe('999 B/s');
    expect(formatRate(0.5)).toBe('0.5 /s');
    expect(formatRate(undefined, 'B')).toBe('—');
    expect(formatSi(46_300_000_000, 'B')).toBe('46.3 GB');
  });
});
