// The table of what a chart draws, derived from its ECharts option: the "Download data" of every chart
// (components/charts/EChart.tsx). A chart whose series are not its data (the metric chart's band is drawn
// as min and max - min) passes its own table instead.
//   line / bar / scatter: one row per point, long form: series, x, y (x named after the x axis, a category
//     axis' label for an index, ISO text on a time axis)
//   heatmap: one row per cell: x label, y label, value (and series when there are several)
//   parallel: one row per line, one column per axis
import type { Cell, DataColumn, DataTable } from './tableExport';

type Rec = Record<string, unknown>;

const asArray = (v: unknown): unknown[] => (Array.isArray(v) ? v : v === undefined || v === null ? [] : [v]);
const isRec = (v: unknown): v is Rec => typeof v === 'object' && v !== null && !Array.isArray(v);

function cell(v: unknown): Cell {
  if (v === null || v === undefined) return null;
  if (typeof v === 'number') return Number.isFinite(v) ? v : null;
  if (typeof v === 'string' || typeof v === 'boolean') return v;
  if (v instanceof Date) return v.toISOString();
  if (isRec(v) && 'value' in v) return cell(v.value);
  return JSON.stringify(v);
}

/** A data item's value: the item itself, or `{ value }`. */
const valueOf = (item: unknown): unknown => (isRec(item) && 'value' in item ? item.value : item);

interface Axis {
  name: string | null;
  type: string;
  categories: unknown[] | null;
}

function axisOf(option: Rec, key: 'xAxis' | 'yAxis'): Axis {
  const a = asArray(option[key])[0];
  if (!isRec(a)) return { name: null, type: 'value', categories: null };
  const type = typeof a.type === 'string' ? a.type : a.data ? 'category' : 'value';
  return {
    name: typeof a.name === 'string' && a.name ? a.name : null,
    type,
    categories: type === 'category' && Array.isArray(a.data) ? a.data.map(valueOf) : null,
  };
}

/** A coordinate as its axis shows it: a category's label for an index, ISO time on a time axis. */
function onAxis(v: unknown, axis: Axis): Cell {
  if (axis.categories && typeof v === 'number' && Number.isInteger(v) && v >= 0 && v < axis.categories.length)
    return cell(axis.categories[v]);
  if (axis.type === 'time' && typeof v === 'number' && Number.isFinite(v)) return new Date(v).toISOString();
  return cell(v);
}

function columns(names: string[], rows: Cell[][]): DataTable {
  // names made unique: "x", "x (2)", ...
  const seen = new Map<string, number>();
  const unique = names.map((n) => {
    const k = (seen.get(n) ?? 0) + 1;
    seen.set(n, k);
    return k === 1 ? n : `${n} (${k})`;
  });
  return { columns: unique.map((name, j): DataColumn => ({ name, values: rows.map((r) => r[j] ?? null) })) };
}

function parallelTable(option: Rec, series: Rec[]): DataTable {
  const axes = asArray(option.parallelAxis).filter(isRec);
  const dims = axes.map((a, i) => (typeof a.dim === 'number' ? a.dim : i));
  const names = axes.map((a, i) => (typeof a.name === 'string' && a.name ? a.name : `axis ${i + 1}`));
  const rows: Cell[][] = [];
  for (const s of series) {
    for (const item of asArray(s.data)) {
      const values = asArray(valueOf(item));
      rows.push(dims.map((d) => cell(values[d])));
    }
  }
  return columns(names, rows);
}

function heatmapTable(series: Rec[], x: Axis, y: Axis): DataTable {
  const several = series.length > 1;
  const rows: Cell[][] = [];
  series.forEach((s, i) => {
    for (const item of asArray(s.data)) {
      const [cx, cy, v] = asArray(valueOf(item));
      const row = [onAxis(cx, x), onAxis(cy, y), cell(v)];
      rows.push(several ? [seriesName(s, i), ...row] : row);
    }
  });
  const names = [x.name ?? 'x', y.name ?? 'y', 'value'];
  return columns(several ? ['series', ...names] : names, rows);
}

const seriesName = (s: Rec, i: number): string => (typeof s.name === 'string' && s.name ? s.name : `series ${i + 1}`);

function pointsTable(series: Rec[], x: Axis, y: Axis): DataTable {
  // bars along a category y axis (horizontal): the category is the row's label, the value its x
  const horizontal = y.categories !== null && x.categories === null;
  const label = horizontal ? y : x;
  const rows: Cell[][] = [];
  series.forEach((s, i) => {
    const name = seriesName(s, i);
    asArray(s.data).forEach((item, j) => {
      const v = valueOf(item);
      if (Array.isArray(v)) {
        const [a, b] = v;
        rows.push(horizontal ? [name, onAxis(b, y), cell(a)] : [name, onAxis(a, x), cell(b)]);
      } else {
        rows.push([name, onAxis(j, label), cell(v)]);
      }
    });
  });
  const value = horizontal ? x : y;
  return columns(['series', label.name ?? (horizontal ? 'y' : 'x'), value.name ?? 'value'], rows);
}

/** What the chart of `option` draws, as a table (see the file's comment). */
export function chartTable(option: unknown): DataTable {
  if (!isRec(option)) return { columns: [] };
  const series = asArray(option.series).filter(isRec);
  if (series.some((s) => s.type === 'parallel')) return parallelTable(option, series.filter((s) => s.type === 'parallel'));
  const x = axisOf(option, 'xAxis');
  const y = axisOf(option, 'yAxis');
  const heat = series.filter((s) => s.type === 'heatmap');
  if (heat.length) return heatmapTable(heat, x, y);
  return pointsTable(series, x, y);
}

/** A metric's downsampled buckets as the metric chart's table: what each drawn point summarises (the
 *  step range, how many points, their min / max and the last value, the line), not the band's parts. */
export function bucketsTable(
  metricKey: string,
  buckets: readonly {
    step_start: number; step_end: number; count: number; min: number | null; max: number | null; last: number | null; time?: string | null;
    nonfinite?: number; last_nonfinite?: string | null;
  }[],
): DataTable {
  const withTime = buckets.some((b) => b.time);
  // NaN and infinities kept: how many a bucket holds, and the last value's kind ("NaN", "Infinity", "-Infinity")
  // where `last` is empty; only when some bucket has one (CSV and Parquet cells of text)
  const withOdd = buckets.some((b) => (b.nonfinite ?? 0) > 0 || b.last_nonfinite);
  const names = ['key', 'step_start', 'step_end', 'count', 'min', 'max', 'last', ...(withOdd ? ['nonfinite', 'last_nonfinite'] : []), ...(withTime ? ['time'] : [])];
  const rows = buckets.map((b): Cell[] => [
    metricKey, b.step_start, b.step_end, b.count, cell(b.min), cell(b.max), cell(b.last),
    ...(withOdd ? [b.nonfinite ?? 0, b.last_nonfinite ?? null] : []),
    ...(withTime ? [b.time ?? null] : []),
  ]);
  return columns(names, rows);
}

/** The parallel coordinates' table with the run each line is (its rows end with the run id, not an axis). */
export function parallelRunsTable(axes: readonly { name: string }[], rows: readonly (number | string)[][]): DataTable {
  return columns(['run', ...axes.map((a) => a.name)], rows.map((r) => [cell(r[axes.length]), ...axes.map((_, j) => cell(r[j]))]));
}
