/**
 * A small, fast, seedable random generator (a Weyl sequence through the murmur3 finaliser) for
 * the fake cluster. Math.random cannot be seeded, and the simulation must replay exactly.
 */
export class Prng {
  private state: number;

  constructor(seed: number) {
    this.state = (Math.trunc(seed) ^ 0x5bd1e995) | 0;
  }

  /** Uniform in [0, 1). */
  next(): number {
    this.state = (this.state + 0x9e3779b9) | 0;
    let z = this.state;
    z = Math.imul(z ^ (z >>> 16), 0x85ebca6b);
    z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35);
    z ^= z >>> 16;
    return (z >>> 0) / 4_294_967_296;
  }

  /** Integer in [lo, hi]. */
  int(lo: number, hi: number): number {
    return lo + Math.floor(this.next() * (hi - lo + 1));
  }

  chance(p: number): boolean {
    return this.next() < p;
  }

  pick<T>(items: readonly T[]): T {
    return items[Math.floor(this.next() * items.length)] as T;
  }

  /** How many events happen when `expected` are expected (integer part, plus one by chance). */
  count(expected: number): number {
    const whole = Math.floor(expected);
    return whole + (this.chance(expected - whole) ? 1 : 0);
  }
}
