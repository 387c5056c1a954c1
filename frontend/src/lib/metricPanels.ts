// The run page's metric panels: keys grouped into sections by their first path segment (`moe/load/e0`
// -> `moe`), filtered by a search box, and the per-chart options (log scale, smoothing, x axis) applied
// to a downsampled series. Pure functions, unit-tested (metricPanels.test.ts).
import { zoomWindow, type Bucket } from './buckets';
import { naturalCompare } from './plainFormat';

/** Keys without a `/` go to this section, first. */
export const GENERAL_SECTION = 'general';
/** The worker's system metrics (worker/runtime/sysmetrics.py): their own section, last. */
export const SYSTEM_SECTION = 'system';

export interface MetricSection {
  name: string;
  keys: string[];
}

/** A key's section: its first path segment, or GENERAL_SECTION for a key without one. */
export function sectionOf(key: string): string {
  const i = key.indexOf('/');
  return i > 0 ? key.slice(0, i) : GENERAL_SECTION;
}

/**
 * Whether `key` matches the search box: every whitespace-separated term occurs in it (case-insensitive),
 * so `load l0` finds `moe/l0/load/e3`. An empty search matches everything.
 */
export function matchesSearch(key: string, search: string): boolean {
  const k = key.toLowerCase();
  return search
    .toLowerCase()
    .split(/\s+/)
    .filter(Boolean)
    .every((term) => k.includes(term));
}

/**
 * The run's keys in sections, each key once (a repeated key is one panel), sections in name order with
 * GENERAL_SECTION first and SYSTEM_SECTION last, keys in natural order; sections with no key matching
 * `search` are left out.
 */
export function groupMetricKeys(keys: readonly string[], search = ''): MetricSection[] {
  const sections = new Map<string, Set<string>>();
  for (const key of keys) {
    if (!matchesSearch(key, search)) continue;
    const name = sectionOf(key);
    let set = sections.get(name);
    if (!set) sections.set(name, (set = new Set()));
    set.add(key);
  }
  const rank = (name: string) => (name === GENERAL_SECTION ? 0 : name === SYSTEM_SECTION ? 2 : 1);
  return [...sections.entries()]
    .sort(([a], [b]) => rank(a) - rank(b) || naturalCompare(a, b))
    .map(([name, set]) => ({ name, keys: [...set].sort(naturalCompare) }));
}

// -- per-chart options -------------------------------------------------------------------------------

export type XAxisMode = 'step' | 'time' | 'relative';

export interface ChartOptions {
  logScale: boolean;
  /** EMA weight in [0, MAX_SMOOTHING]: 0 is the raw series */
  smoothing: number;
  xAxis: XAxisMode;
}

export const DEFAULT_CHART_OPTIONS: ChartOptions = { logScale: false, smoothing: 0, xAxis: 'step' };

/**
 * A system metric (`system/cpu_percent`, ...): worker/runtime/sysmetrics.py logs it at "step" = whole
 * seconds since the run was created (a resumed attempt goes on from there), so its step axis is time, not
 * steps.
 */
export const isSystemKey = (key: string): boolean => key.startsWith(`${SYSTEM_SECTION}/`);

export interface XAxisChoice {
  value: XAxisMode;
  label: string;
}

/**
 * The x axes a chart of `key` offers. A system metric's step already is the time since the run was
 * created ("Since created"); the time since the run started would be a second copy of it, shifted by
 * the time the run queued, so it is not offered.
 */
export function xAxisChoices(key: string): XAxisChoice[] {
  if (isSystemKey(key)) return [{ value: 'step', label: 'Since created' }, { value: 'time', label: 'Wall time' }];
  return [{ value: 'step', label: 'Step' }, { value: 'time', label: 'Wall time' }, { value: 'relative', label: 'Relative' }];
}

/** The name under a chart's x axis. */
export function xAxisName(key: string, mode: XAxisMode): string {
  if (mode === 'time') return 'time';
  if (mode === 'relative') return 'time since start';
  return isSystemKey(key) ? 'time since the run was created' : 'step';
}

/** Whether the chart of `key` draws time on x (a system metric's step is seconds). */
export const xIsTime = (key: string, mode: XAxisMode): boolean => mode !== 'step' || isSystemKey(key);

/** Where a single point of `key` lies, in words: `at step 12`, or for a system metric `at 45s`. */
export function pointAt(key: string, step: number): string {
  return isSystemKey(key) ? `at ${formatSeconds(step)} after the run was created` : `at step ${step}`;
}
/** Above this the EMA lags the data by ~100 points: a flat line, no longer a trend. */
export const MAX_SMOOTHING = 0.99;

/**
 * Exponential moving average with TensorBoard's debiasing: s_i = w*s_{i-1} + (1-w)*v_i from s_{-1} = 0,
 * divided by 1 - w^(n_i) (n_i: values seen so far), so the first points are not pulled towards zero.
 * Null values (gaps) stay null and do not advance the average.
 */
export function emaSmooth(values: readonly (number | null)[], weight: number): (number | null)[] {
  const w = Math.min(Math.max(weight, 0), MAX_SMOOTHING);
  if (w === 0) return [...values];
  let acc = 0;
  let n = 0;
  return values.map((v) => {
    if (v === null || !Number.isFinite(v)) return null;
    acc = w * acc + (1 - w) * v;
    n += 1;
    return acc / (1 - w ** n);
  });
}

/** One bucket's x under an axis mode: its last step, its time (epoch ms), or seconds since `origin` (ms). */
export function bucketX(b: Bucket, mode: XAxisMode, originMs: number | null): number | null {
  if (mode === 'step') return b.step_end;
  const t = b.time ? Date.parse(b.time) : NaN;
  if (!Number.isFinite(t)) return null;
  if (mode === 'time') return t;
  return (t - (originMs ?? t)) / 1000;
}

/** The x extent of a chart of `buckets` under `mode`: its first and last bucket's x among those with one
 *  (over time, those with a time, as shapeColumns keeps them); null unless it spans something. */
export function drawnExtent(buckets: readonly Bucket[], mode: XAxisMode, originMs: number | null): [number, number] | null {
  let first: number | null = null;
  let last: number | null = null;
  for (const b of buckets) {
    const x = bucketX(b, mode, originMs);
    if (x === null) continue;
    if (first === null) first = x;
    last = x;
  }
  return first !== null && last !== null && last > first ? [first, last] : null;
}

/** The origin of relative time: the run's start, else the first bucket's time (ms since the epoch). */
export function relativeOrigin(startedAt: string | null | undefined, buckets: readonly Bucket[]): number | null {
  const started = startedAt ? Date.parse(startedAt) : NaN;
  if (Number.isFinite(started)) return started;
  for (const b of buckets) {
    const t = b.time ? Date.parse(b.time) : NaN;
    if (Number.isFinite(t)) return t;
  }
  return null;
}

export interface ShapedSeries {
  /** [x, last] per bucket, smoothed if asked */
  line: [number, number][];
  /** [x, raw last] when smoothing: drawn faint under the smoothed line */
  raw: [number, number][];
  /** [x, min] and [x, max - min]: the band, when buckets aggregate several points */
  lower: [number, number][];
  width: [number, number][];
  hasBand: boolean;
  /** points left out: not positive on a log scale, or without a time on a time axis */
  dropped: number;
  /** buckets holding NaN or infinite values: where, and what (the last value's kind, else how many) */
  nonfinite: { x: number; label: string }[];
  /** x of the buckets whose last value is NaN or infinite: where a drawn line breaks (withBreaks) */
  breaks: number[];
}

/** What a bucket holds that is not a number: its last value's kind ("NaN", "Infinity", "-Infinity"), else
 *  how many such points it aggregates; null when none. */
export function nonfiniteLabel(b: Pick<Bucket, 'last_nonfinite' | 'nonfinite'>): string | null {
  if (b.last_nonfinite) return b.last_nonfinite;
  const n = b.nonfinite ?? 0;
  return n > 0 ? `${n} NaN/inf` : null;
}

const finite = (v: number | null | undefined): v is number => v !== null && v !== undefined && Number.isFinite(v);

/** A y value of aligned columns: a number, `null` (a gap: the line breaks there) or `undefined` (nothing
 *  here: the line joins its neighbours across it, as uPlot draws them). */
export type Y = number | null | undefined;

/** A metric's buckets as columns over one x: what both shapes below (shapeSeries, lib/metricFrame.ts) are. */
export interface ShapedColumns {
  /** each drawn bucket's x (its last step, epoch ms, or seconds since the origin) */
  xs: number[];
  /** the last value per bucket, smoothed if asked */
  line: Y[];
  /** the raw last values when smoothing (else all gaps) */
  raw: Y[];
  /** each bucket's min and max where a band can be drawn (on a log scale: a positive min) */
  lower: Y[];
  upper: Y[];
  /** some bucket aggregates several distinct values */
  hasBand: boolean;
  /** buckets left out: not positive on a log scale (`notPositive` of them), or without a time on a time axis */
  dropped: number;
  notPositive: number;
  nonfinite: { x: number; label: string }[];
}

/**
 * The chart's columns under its options: x from the axis mode, the line smoothed (the EMA runs over the
 * buckets' last values in step order), and on a log scale only positive values (a band whose min is not
 * positive is left out, its line point kept if positive); a bucket whose last value is NaN or infinite
 * breaks the line (`null`), any other missing value is joined across (`undefined`).
 */
export function shapeColumns(buckets: readonly Bucket[], options: ChartOptions, originMs: number | null = null): ShapedColumns {
  const smoothed = emaSmooth(buckets.map((b) => (finite(b.last) ? b.last : null)), options.smoothing);
  const ok = (v: number) => !options.logScale || v > 0;
  const c: ShapedColumns = { xs: [], line: [], raw: [], lower: [], upper: [], hasBand: false, dropped: 0, notPositive: 0, nonfinite: [] };
  buckets.forEach((b, i) => {
    const x = bucketX(b, options.xAxis, originMs);
    if (x === null) {
      c.dropped += 1;
      return;
    }
    c.xs.push(x);
    const odd = nonfiniteLabel(b);
    if (odd !== null) c.nonfinite.push({ x, label: odd });
    const gap = b.last_nonfinite ? null : undefined; // NaN or inf at the bucket's last step: the line breaks there
    const y = smoothed[i];
    if (finite(y) && ok(y)) c.line.push(y);
    else {
      c.line.push(gap);
      if (finite(b.last)) {
        c.dropped += 1;
        c.notPositive += 1;
      }
    }
    c.raw.push(options.smoothing > 0 && finite(b.last) && ok(b.last) ? b.last : gap);
    const band = finite(b.min) && finite(b.max) && ok(b.min);
    c.lower.push(band ? b.min : undefined);
    c.upper.push(band ? b.max : undefined);
    if (band && b.count > 1 && b.max! > b.min!) c.hasBand = true;
  });
  return c;
}

/** The chart's series as [x, y] pairs (ECharts' form: the overlay of runs, lib/overlay.ts), from shapeColumns. */
export function shapeSeries(buckets: readonly Bucket[], options: ChartOptions, originMs: number | null = null): ShapedSeries {
  const c = shapeColumns(buckets, options, originMs);
  const pairs = (ys: readonly Y[]) => c.xs.flatMap((x, i): [number, number][] => (typeof ys[i] === 'number' ? [[x, ys[i]]] : []));
  const lower = pairs(c.lower);
  return {
    line: pairs(c.line),
    raw: pairs(c.raw),
    lower,
    width: c.xs.flatMap((x, i): [number, number][] => (typeof c.lower[i] === 'number' ? [[x, (c.upper[i] as number) - (c.lower[i] as number)]] : [])),
    hasBand: c.hasBand,
    dropped: c.dropped,
    nonfinite: c.nonfinite,
    breaks: c.xs.filter((_, i) => c.line[i] === null),
  };
}

/** `line` with a gap (`[x, null]`, which ECharts leaves undrawn) at each of `breaks`, in x order: a line
 *  that does not join its neighbours across a NaN or an infinity. */
export function withBreaks(line: readonly [number, number][], breaks: readonly number[]): [number, number | null][] {
  if (breaks.length === 0) return [...line];
  const gaps: [number, null][] = breaks.map((x) => [x, null]);
  return [...line, ...gaps].sort((a, b) => a[0] - b[0]);
}

/**
 * The step range a zoom of [startPct, endPct] selects when the x axis is not the step: the x window
 * over the drawn extent, then the steps of the buckets inside it (x grows with the step: time does).
 * Null when the window covers (nearly) everything (`minFraction`) or no bucket.
 */
export function zoomToStepRangeByX(
  buckets: readonly Bucket[],
  xs: readonly (number | null)[],
  startPct: number,
  endPct: number,
  minFraction = 0.9,
): { min: number; max: number } | null {
  const drawn = xs.filter(finite);
  const extent: [number, number] | null = drawn.length < 2 ? null : [Math.min(...drawn), Math.max(...drawn)];
  const w = zoomWindow(extent, { start: startPct, end: endPct });
  if (!extent || !w || (w[1] - w[0]) / (extent[1] - extent[0]) >= minFraction) return null;
  const [a, b] = w;
  let min: number | null = null;
  let max: number | null = null;
  buckets.forEach((bucket, i) => {
    const x = xs[i];
    if (!finite(x) || x < a || x > b) return;
    min = min === null ? bucket.step_start : Math.min(min, bucket.step_start);
    max = max === null ? bucket.step_end : Math.max(max, bucket.step_end);
  });
  return min !== null && max !== null ? { min, max } : null;
}

/** An axis label for seconds: 45s, 12m 5s, 3h 20m. */
export function formatSeconds(s: number): string {
  if (!Number.isFinite(s)) return '';
  const sign = s < 0 ? '-' : '';
  let t = Math.round(Math.abs(s));
  if (t < 60) return `${sign}${t}s`;
  if (t < 3600) return `${sign}${Math.floor(t / 60)}m${t % 60 ? ` ${t % 60}s` : ''}`;
  t = Math.round(t / 60);
  return `${sign}${Math.floor(t / 60)}h${t % 60 ? ` ${t % 60}m` : ''}`;
}
