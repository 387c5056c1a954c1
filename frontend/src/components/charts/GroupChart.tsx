// One metric of several run groups (seed groups, lib/groupSeries.ts) in one chart. A group draws, by the
// view's chart mode (lib/viewState.ts `chart`):
//   mean_ci   its mean line over steps with the 95% Student-t interval as a shaded band,
//   envelope  its mean line with the members' min/max as the band,
//   members   every member's line, thin, in the group's colour, under the group's mean line.
// A group of one is just its line, never a band. The mean lines carry n per step, shown in the tooltip.
// A pure chart: groups in (aligned by alignGroup), picture out; the bands are ciBand.ts's stacked series
// (ids `band-lo:` / `band-w:` with keys `ci:<i>` or `env:<i>`).
// The chart's options (log scale, smoothing: the run page's, components/runs/ChartOptionsMenu.tsx) reach it
// as `options`; smoothing is applied to the members before they are grouped (GroupsOverlay), the raw mean
// then drawn faint under the smoothed one. A band stops at the metric's natural bounds (lib/bandBounds.ts:
// 0 for a metric that is never negative, 1 above a proportion), and on a log axis at the smallest value
// drawn; the chart says so under it.
import { Text } from '@mantine/core';
import { memo, useCallback, useMemo } from 'react';
import { clipBands, clipNote, naturalBounds } from '../../lib/bandBounds';
import { formatValue } from '../../lib/dotted';
import type { GroupPoint, MemberSeries } from '../../lib/groupSeries';
import { DEFAULT_OVERLAY_OPTIONS, type OverlayOptions } from '../../lib/overlay';
import type { Cell, DataTable } from '../../lib/tableExport';
import type { ChartMode } from '../../lib/viewState';
import { ciBandSeries } from './ciBand';
import { EChart } from './EChart';
import type { EChartsOption } from './echarts';
import { OVERLAY_COLORS } from './OverlayChart';

export interface ChartGroup {
  name: string;
  /** the group's curve: its statistics per step (alignGroup) */
  points: readonly GroupPoint[];
  /** each member's own curve (drawn in `members` mode), smoothed when the options smooth */
  members: readonly { runId: number; points: MemberSeries }[];
  /** when smoothing: the group's curve over its raw members, drawn faint under `points` */
  rawPoints?: readonly GroupPoint[];
  /** every raw value of its members: the metric's natural bounds come from them (default: `members`' values) */
  values?: readonly number[];
}

export const MODE_LABELS: Record<ChartMode, string> = { mean_ci: 'mean ± 95% CI', envelope: 'min/max envelope', members: 'every member' };

const color = (i: number) => OVERLAY_COLORS[i % OVERLAY_COLORS.length]!;

function tooltip(params: unknown): string {
  const list = (Array.isArray(params) ? params : [params]) as { seriesId?: string; seriesName?: string; marker?: string; value?: unknown }[];
  const means = list.filter((p) => p.seriesId?.startsWith('mean:'));
  if (means.length === 0) return '';
  const step = (means[0]!.value as number[])[0];
  const rows = means.map((p) => {
    const [, mean, n, lo, hi, min, max] = p.value as (number | null)[];
    const ci = lo !== null && hi !== null && lo !== undefined && hi !== undefined ? ` [${formatValue(lo)}, ${formatValue(hi)}]` : '';
    const range = n !== null && n! > 1 ? ` min ${formatValue(min)} max ${formatValue(max)}` : '';
    return `${p.marker ?? ''}${p.seriesName}: ${formatValue(mean)}${ci} (n=${n})${range}`;
  });
  return [`step ${step}`, ...rows].join('<br/>');
}

/** What the group chart draws: its option, the note under a clipped band, and the lowest band end drawn. */
export interface GroupChartDrawing {
  option: EChartsOption;
  /** "band clipped at 0: ...", or null when no band crossed a bound */
  clipNote: string | null;
  /** the lowest lower end of any band drawn (null: no band) */
  bandMin: number | null;
}

const positive = (v: number) => Number.isFinite(v) && v > 0;

export function groupChart(metricKey: string, groups: readonly ChartGroup[], mode: ChartMode, options: OverlayOptions = DEFAULT_OVERLAY_OPTIONS): GroupChartDrawing {
  const log = options.logScale;
  // a log axis draws positive values only: a mean or a member's value <= 0 is left out
  const shown = (v: number) => !log || positive(v);
  const bounds = naturalBounds(metricKey, groups.flatMap((g) => g.values ?? g.members.flatMap((m) => m.points.map(([, v]) => v))));
  let logFloor: number | null = null;
  if (log) {
    const drawn = groups.flatMap((g) => [...g.points.map((p) => p.mean), ...(mode === 'members' ? g.members.flatMap((m) => m.points.map(([, v]) => v)) : [])]);
    const min = Math.min(...drawn.filter(positive));
    logFloor = Number.isFinite(min) ? min : null;
  }
  const series: unknown[] = [];
  let clippedLo = false;
  let clippedHi = false;
  let floor: number | null = null;
  let bandMin: number | null = null;
  groups.forEach((g, i) => {
    const several = g.members.length > 1;
    const points = g.points.filter((p) => shown(p.mean));
    if (mode === 'members' && several) {
      for (const m of g.members) {
        series.push({
          id: `member:${i}:${m.runId}`, name: g.name, type: 'line', symbol: 'none', data: m.points.filter(([, v]) => shown(v)), silent: true,
          lineStyle: { width: 1, color: color(i), opacity: 0.45 }, itemStyle: { color: color(i) }, tooltip: { show: false },
        });
      }
    }
    if (several && mode !== 'members') {
      const data = points.map((p) => [p.step, p.mean] as const);
      const raw = points.map((p) => (mode === 'envelope' ? { lo: p.min, hi: p.max, method: 't' as const } : p.ci ? { ...p.ci, method: 't' as const } : null));
      const clipped = clipBands(raw, bounds, log ? logFloor : null);
      clippedLo ||= clipped.clippedLo;
      clippedHi ||= clipped.clippedHi;
      floor = clipped.floor;
      const band = ciBandSeries({ name: g.name, key: `${mode === 'envelope' ? 'env' : 'ci'}:${i}`, data, ci: clipped.bands, color: color(i) });
      if (band.length) {
        const lows = clipped.bands.map((b) => b!.lo);
        bandMin = Math.min(bandMin ?? Infinity, ...lows);
      }
      series.push(...band);
    }
    if (g.rawPoints) {
      series.push({
        id: `raw:${i}`, name: g.name, type: 'line', symbol: 'none', silent: true, tooltip: { show: false },
        data: g.rawPoints.filter((p) => shown(p.mean)).map((p) => [p.step, p.mean]),
        lineStyle: { width: 1, color: color(i), opacity: 0.3 }, itemStyle: { color: color(i) },
      });
    }
    series.push({
      id: `mean:${i}`, name: g.name, type: 'line', symbol: 'none',
      // [step, mean, n, ci lo, ci hi, min, max]: x and y are the first two, the rest is for the tooltip
      data: points.map((p) => [p.step, p.mean, p.n, p.ci?.lo ?? null, p.ci?.hi ?? null, p.min, p.max]),
      encode: { x: 0, y: 1 },
      lineStyle: { width: 2, color: color(i) }, itemStyle: { color: color(i) },
    });
  });
  const yAxis = log ? { type: 'log', scale: true, name: metricKey } : { type: 'value', scale: true, name: metricKey };
  const option: EChartsOption = {
    animation: false,
    color: OVERLAY_COLORS,
    grid: { left: 56, right: 16, top: 40, bottom: 56 },
    legend: { type: 'scroll', top: 0, data: groups.map((g) => g.name) },
    tooltip: { trigger: 'axis', formatter: tooltip },
    xAxis: { type: 'value', name: 'step', nameLocation: 'middle', nameGap: 24, scale: true },
    yAxis: yAxis as EChartsOption['yAxis'],
    dataZoom: [{ type: 'inside', filterMode: 'none' }, { type: 'slider', height: 18, bottom: 4, filterMode: 'none' }],
    series: series as EChartsOption['series'],
  };
  return { option, clipNote: clipNote({ clippedLo, clippedHi, floor }, bounds, log), bandMin };
}

/** The group chart's ECharts option (groupChart's). */
export const groupChartOption = (metricKey: string, groups: readonly ChartGroup[], mode: ChartMode, options: OverlayOptions = DEFAULT_OVERLAY_OPTIONS): EChartsOption =>
  groupChart(metricKey, groups, mode, options).option;

/** "Download data": one row per group and step with n, mean, the 95% interval and the min/max envelope. */
export function groupTable(metricKey: string, groups: readonly ChartGroup[]): DataTable {
  const cols: Record<string, Cell[]> = { group: [], step: [], n: [], [metricKey]: [], ci95_lo: [], ci95_hi: [], min: [], max: [] };
  for (const g of groups) {
    for (const p of g.points) {
      cols.group!.push(g.name);
      cols.step!.push(p.step);
      cols.n!.push(p.n);
      cols[metricKey]!.push(p.mean);
      cols.ci95_lo!.push(p.ci?.lo ?? null);
      cols.ci95_hi!.push(p.ci?.hi ?? null);
      cols.min!.push(p.min);
      cols.max!.push(p.max);
    }
  }
  return { columns: Object.entries(cols).map(([name, values]) => ({ name, values })) };
}

function GroupChartImpl({ metricKey, groups, mode, options = DEFAULT_OVERLAY_OPTIONS, height = 320 }: {
  metricKey: string;
  groups: readonly ChartGroup[];
  mode: ChartMode;
  options?: OverlayOptions;
  height?: number;
}) {
  const drawing = useMemo(() => groupChart(metricKey, groups, mode, options), [metricKey, groups, mode, options]);
  const option = drawing.option;
  const table = useCallback(() => groupTable(metricKey, groups), [metricKey, groups]);
  const ids = (option.series as { id: string }[]).map((s) => s.id);
  return (
    <div
      data-testid="group-chart"
      data-mode={mode}
      data-groups={groups.length}
      data-group-n={groups.map((g) => g.members.length).join(',')}
      data-bands={ids.filter((id) => id.startsWith('band-w:')).map((id) => id.slice('band-w:'.length)).join(',')}
      data-members={ids.filter((id) => id.startsWith('member:')).length}
      data-y-scale={options.logScale ? 'log' : 'linear'}
      data-smoothing={options.smoothing}
      data-band-min={drawing.bandMin ?? ''}
      data-clipped={drawing.clipNote ? 'true' : 'false'}
    >
      {/* a y axis type change (value <-> log) is a new chart option, not a merge into the old one */}
      <EChart
        key={options.logScale ? 'log' : 'linear'}
        option={option}
        height={height}
        ariaLabel={`${metricKey} of ${groups.length} groups (${MODE_LABELS[mode]})`}
        testId="group-chart-canvas"
        data={table}
      />
      {drawing.clipNote && (
        <Text size="xs" c="dimmed" data-testid="group-chart-clipped">
          {drawing.clipNote}
        </Text>
      )}
    </div>
  );
}

export const GroupChart = memo(GroupChartImpl);
