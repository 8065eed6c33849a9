/**
 * Counting the turns of the event loop that other work got while `work` ran: a code path that
 * yields shows turns, one that runs in microtasks only (or straight through) shows none. Turns are
 * counted by order, never by time.
 */
export async function turnsDuring<T>(work: () => Promise<T>): Promise<{ value: T; turns: number }> {
  let turns = 0;
  let done = false;
  const turn = (): void => {
    if (done) return;
    turns++;
    setImmediate(turn);
  };
  setImmediate(turn);
  try {
    return { value: await work(), turns };
  } finally {
    done = true;
  }
}
