// Where a chart's shaded band may not go: a metric's natural bounds. A 95% interval of a mean is symmetric
// around it, so near a bound it crosses it (a loss under 0.4 with a wide interval reached -0.6), which no
// member's value ever does. The bounds come from the data and the metric's kind:
//   below at 0   when every value drawn is >= 0 (a loss, an error, a count, a time: a non-negative metric),
//   above at 1   when, besides, every value is <= 1 and the key names a proportion (an accuracy, a rate:
//                PROPORTION_WORDS, the last word of the key that names a goal in lib/metricGoal.ts).
// A band is clipped at its bounds, and the chart says so. On a log axis, where 0 has no place, the lower
// end of a band is raised to the smallest positive value the chart draws.
import { formatValue } from './dotted';

export interface NaturalBounds {
  /** the band's lowest end (0), or null: the data go below 0 */
  lo: number | null;
  /** the band's highest end (1), or null */
  hi: number | null;
}

/** Words of a key that make it a proportion in [0, 1] (when its values say so too). */
const PROPORTION_WORDS = new Set([
  'acc', 'accuracy', 'precision', 'recall', 'f1', 'auc', 'em', 'exact', 'correct', 'consistency', 'rate', 'fraction', 'frac', 'ratio', 'proportion',
]);

/** Whether the key names a proportion: one of its words (split at anything not a letter or digit) does. */
export function isProportionKey(key: string): boolean {
  return key
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .some((w) => PROPORTION_WORDS.has(w));
}

/** `key`'s natural bounds from the values it takes (each member's values, every finite one). */
export function naturalBounds(key: string, values: Iterable<number>): NaturalBounds {
  let any = false;
  let min = Infinity;
  let max = -Infinity;
  for (const v of values) {
    if (!Number.isFinite(v)) continue;
    any = true;
    if (v < min) min = v;
    if (v > max) max = v;
  }
  if (!any || min < 0) return { lo: null, hi: null };
  return { lo: 0, hi: max <= 1 && isProportionKey(key) ? 1 : null };
}

export interface Band {
  lo: number;
  hi: number;
}

export interface ClippedBands<B extends Band | null> {
  bands: B[];
  /** some band went below the lower bound (or, on a log axis, to 0 or below) and was raised */
  clippedLo: boolean;
  /** some band went above the upper bound and was lowered */
  clippedHi: boolean;
  /** the lower end's floor used: the bound, or on a log axis the smallest positive value drawn */
  floor: number | null;
}

/**
 * `bands` clipped at `bounds`; on a log axis (`logFloor`: the smallest positive value the chart draws) a
 * lower end that is not positive is raised to that floor. A null band stays null.
 */
export function clipBands<B extends Band | null>(bands: readonly B[], bounds: NaturalBounds, logFloor: number | null = null): ClippedBands<B> {
  const floor = logFloor !== null ? Math.max(logFloor, bounds.lo ?? -Infinity) : bounds.lo;
  let clippedLo = false;
  let clippedHi = false;
  const out = bands.map((b) => {
    if (b === null) return b;
    let { lo, hi } = b;
    const low = logFloor !== null ? lo <= 0 || (bounds.lo !== null && lo < bounds.lo) : bounds.lo !== null && lo < bounds.lo;
    if (low && floor !== null) {
      lo = floor;
      clippedLo = true;
    }
    if (bounds.hi !== null && hi > bounds.hi) {
      hi = bounds.hi;
      clippedHi = true;
    }
    if (hi < lo) hi = lo;
    return { ...b, lo, hi };
  });
  return { bands: out, clippedLo, clippedHi, floor };
}

/**
 * What the chart says under a clipped band: "band clipped at 0: no value is below 0", "band clipped at 0
 * and 1: ...", on a log axis the floor it used; null when nothing was clipped.
 */
export function clipNote(clip: Pick<ClippedBands<Band | null>, 'clippedLo' | 'clippedHi' | 'floor'>, bounds: NaturalBounds, log = false): string | null {
  const at: string[] = [];
  const why: string[] = [];
  if (clip.clippedLo) {
    at.push(formatValue(log ? clip.floor : (bounds.lo ?? clip.floor)));
    why.push(log ? 'the smallest value drawn (a log scale has no 0)' : 'no value is below 0');
  }
  if (clip.clippedHi) {
    at.push(formatValue(bounds.hi));
    why.push('a proportion is at most 1');
  }
  return at.length ? `band clipped at ${at.join(' and ')}: ${why.join(', ')}` : null;
}
