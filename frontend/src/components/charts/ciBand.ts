// A line's 95% intervals (lib/interval.ts) drawn as a shaded band: two stacked line series, the lower ends
// (invisible) and the widths above them (filled). Both take the line's name, so its legend entry shows and
// hides the band with the line; their ids start with "band-" so tooltips can leave them out.
import type { Interval } from '../../lib/interval';

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
