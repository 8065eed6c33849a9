import { describe, expect, it } from 'vitest';
import { internFields } from '../../src/cluster/intern.js';

describe('internFields', () => {
  it('makes equal values one copy, in place, leaving other fields and unequal values alone', () => {
    const tres = () => ['cpu', '=', '4'].join('');
    const items = [
      { id: 'a', tres: tres(), state: ['RUNNING'], exit: { status: ['OK'] }, n: 1 },
      { id: 'b', tres: tres(), state: ['RUNNING'], exit: { status: ['OK'] }, n: 2 },
      { id: 'c', tres: 'cpu=8', state: ['PENDING'], exit: undefined, n: 3 },
    ];
    const [a, b, c] = items;
    expect(a?.state).not.toBe(b?.state);
    internFields(items, { strings: ['tres', 'id'], values: ['state', 'exit'] });
    expect(items[0]).toBe(a);
    expect(b?.state).toBe(a?.state);
    expect(b?.exit).toBe(a?.exit);
    expect(c?.state).not.toBe(a?.state);
    expect(items.map((i) => [i.id, i.tres, i.state, i.exit, i.n])).toEqual([
      ['a', 'cpu=4', ['RUNNING'], { status: ['OK'] }, 1],
      ['b', 'cpu=4', ['RUNNING'], { status: ['OK'] }, 2],
      ['c', 'cpu=8', ['PENDING'], undefined, 3],
    ]);
  });
});
