/** JSON's number grammar, kept apart so that the stream reads as its steps. */
import { Byte, isDigit } from './bytes.js';

/** Where a number is: which bytes may follow. */
export const enum NumAt {
  Start,
  Minus,
  Zero,
  Int,
  Dot,
  Frac,
  Exp,
  ExpSign,
  ExpInt,
}

/** The number state after byte `c`, or undefined when `c` ends the number. */
export function stepNumber(at: NumAt, c: number): NumAt | undefined {
  const digit = isDigit(c);
  const exp = c === Byte.LowerE || c === Byte.UpperE;
  switch (at) {
    case NumAt.Start:
      return c === Byte.Minus ? NumAt.Minus : c === Byte.Zero ? NumAt.Zero : digit ? NumAt.Int : undefined;
    case NumAt.Minus:
      return c === Byte.Zero ? NumAt.Zero : digit ? NumAt.Int : undefined;
    case NumAt.Zero:
    case NumAt.Int:
      if (digit && at === NumAt.Int) return NumAt.Int;
      return c === Byte.Dot ? NumAt.Dot : exp ? NumAt.Exp : undefined;
    case NumAt.Dot:
    case NumAt.Frac:
      if (digit) return NumAt.Frac;
      return exp && at === NumAt.Frac ? NumAt.Exp : undefined;
    case NumAt.Exp:
      return c === Byte.Plus || c === Byte.Minus ? NumAt.ExpSign : digit ? NumAt.ExpInt : undefined;
    default:
      return digit ? NumAt.ExpInt : undefined;
  }
}

/** Whether a number may end in state `at`. */
export function numberComplete(at: NumAt): boolean {
  return at === NumAt.Zero || at === NumAt.Int || at === NumAt.Frac || at === NumAt.ExpInt;
}
