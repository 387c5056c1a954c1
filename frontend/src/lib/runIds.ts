/** Run ids from a URL parameter or a text box: "1, 2 3,,2" -> [1, 2, 3] (first occurrence order). */
export function parseRunIds(text: string | null): number[] {
  return [...new Set((text ?? '').split(/[\s,]+/).map(Number).filter((n) => Number.isInteger(n) && n > 0))];
}
