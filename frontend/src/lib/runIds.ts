/** Run ids from a URL parameter or a text box: "1, 2 3,,2" -> [1, 2, 3] (first occurrence order). */
export function parseRunIds(text: string | null): number[] {
  return [...new Set((text ?? '').split(/[\s,]+/).map(Number).filter((n) => Number.isInteger(n) && n > 0))];
}

/**
 * A run's number as users read it: #1 is an experiment's first run. The API's `index` (and a sweep
 * combination's place in a 422's `loc`) counts from 0; every page shows it from 1, as the run page does.
 */
export function runNumber(index: number): number {
  return index + 1;
}
