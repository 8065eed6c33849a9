/** Parsing slurmrestd's JSON, which is not always JSON. */

/**
 * A bare `Infinity`, `-Infinity` or `NaN` outside a string: how slurmrestd 24.11 prints a
 * non-finite double (its v0.0.40 and v0.0.41 `/shares` send `"level": Infinity` for an
 * association without usage), which JSON.parse refuses. Strings are matched first so their
 * contents are never touched.
 */
const NON_FINITE = /"(?:[^"\\]|\\.)*"|-?Infinity|NaN/g;

/**
 * JSON.parse, except that a body refused only for non-finite numbers is parsed with each of them
 * read as null: the decoders then treat that member as unset, as they do for a non-finite value.
 * Only tried after a failure, so well-formed bodies cost nothing extra.
 */
export function parseSlurmJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch (err) {
    const nulled = text.replace(NON_FINITE, (m) => (m.startsWith('"') ? m : 'null'));
    if (nulled === text) throw err;
    return JSON.parse(nulled) as unknown;
  }
}
