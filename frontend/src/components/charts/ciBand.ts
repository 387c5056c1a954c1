// A line's 95% intervals (lib/interval.ts) drawn as a shaded band: two stacked line series, the lower ends
// (invisible) and the widths above them (filled). Both take the line's name, so its legend entry shows and
// hides the band with the line; their ids start with "band-" so tooltips can leave them out.
import { chartTable } from '../../lib/chartTable';
import type { Interval } from '../../lib/interval';
import type { DataTable } from '../../lib/tableExport';
import type { EChartsOption } from './echarts';

export interface BandOptions {
  /** the line's name (its legend entry) */
  name: string;
  /** a key unique among the chart's bands */
  key: string;
  /** the line's points: [x, y], x a number or a category */
  data: readonly (readonly [number | string, number])[];
  /** the interval of each point; no band unless every point has one */
  ci: readonly (Interval | null)[];
  color?: string;
  yAxisIndex?: number;
}

export function ciBandSeries({ name, key, data, ci, color, yAxisIndex }: BandOptions) {
  if (data.length === 0 || ci.length !== data.length || ci.some((c) => c === null)) return [];
  const common = {
    name,
    type: 'line' as const,
    stack: `band:${key}`,
    symbol: 'none',
    silent: true,
    lineStyle: { opacity: 0 },
    ...(yAxisIndex === undefined ? {} : { yAxisIndex }),
    ...(color ? { itemStyle: { color } } : {}),
  };
  return [
    { ...common, id: `band-lo:${key}`, data: data.map(([x], i) => [x, ci[i]!.lo]) },
    { ...common, id: `band-w:${key}`, data: data.map(([x], i) => [x, ci[i]!.hi - ci[i]!.lo]), areaStyle: { opacity: 0.15 } },
  ];
}

/**
 * "Download data" of a chart with bands (EChart's `data`): the table of its own series (lib/chartTable.ts)
 * with the bands as two columns, ci95_lo and ci95_hi, on the rows of their lines; not the drawn lower ends
 * and widths as series of their own.
 */
export function tableWithBands(option: EChartsOption): DataTable {
  const o = option as { series?: unknown };
  const all = (Array.isArray(o.series) ? o.series : []) as { id?: string; name?: string; data?: unknown[] }[];
  const isBand = (s: { id?: string }) => typeof s.id === 'string' && s.id.startsWith('band-');
  const base = chartTable({ ...(option as object), series: all.filter((s) => !isBand(s)) });
  const bounds = new Map<string, [number, number]>();
  for (const lower of all.filter((s) => s.id?.startsWith('band-lo:'))) {
    const width = all.find((s) => s.id === `band-w:${lower.id!.slice('band-lo:'.length)}`);
    (lower.data ?? []).forEach((item, i) => {
      const [x, lo] = item as [number | string, number];
      const w = (width?.data?.[i] as [number | string, number] | undefined)?.[1] ?? 0;
      bounds.set(`${lower.name}\u0000${String(x)}`, [lo, lo + w]);
    });
  }
  const [series, x] = base.columns;
  if (!series || !x || series.name !== 'series') return base;
  const at = (i: number) => bounds.get(`${String(series.values[i])}\u0000${String(x.values[i])}`);
  const rows = series.values.map((_, i) => at(i));
  return {
    columns: [
      ...base.columns,
      { name: 'ci95_lo', values: rows.map((r) => r?.[0] ?? null) },
      { name: 'ci95_hi', values: rows.map((r) => r?.[1] ?? null) },
    ],
  };
}
