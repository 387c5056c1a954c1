// One metric of several run groups (seed groups, lib/groupSeries.ts) in one chart. A group draws, by the
// view's chart mode (lib/viewState.ts `chart`):
//   mean_ci   its mean line over steps with the 95% Student-t interval as a shaded band,
//   envelope  its mean line with the members' min/max as the band,
//   members   every member's line, thin, in the group's colour, under the group's mean line.
// A group of one is just its line, never a band. The mean lines carry n per step, shown in the tooltip.
// A pure chart: groups in (aligned by alignGroup), picture out; the bands are ciBand.ts's stacked series
// (ids `band-lo:` / `band-w:` with keys `ci:<i>` or `env:<i>`).
import { memo, useCallback, useMemo } from 'react';
import { formatValue } from '../../lib/dotted';
import type { GroupPoint, MemberSeries } from '../../lib/groupSeries';
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
  /** each member's own curve (drawn in `members` mode) */
  members: readonly { runId: number; points: MemberSeries }[];
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

export function groupChartOption(metricKey: string, groups: readonly ChartGroup[], mode: ChartMode): EChartsOption {
  const series: unknown[] = [];
  groups.forEach((g, i) => {
    const several = g.members.length > 1;
    if (mode === 'members' && several) {
      for (const m of g.members) {
        series.push({
          id: `member:${i}:${m.runId}`, name: g.name, type: 'line', symbol: 'none', data: m.points, silent: true,
          lineStyle: { width: 1, color: color(i), opacity: 0.45 }, itemStyle: { color: color(i) }, tooltip: { show: false },
        });
      }
    }
    if (several && mode !== 'members') {
      const data = g.points.map((p) => [p.step, p.mean] as const);
      const bounds = g.points.map((p) => (mode === 'envelope' ? { lo: p.min, hi: p.max, method: 't' as const } : p.ci ? { ...p.ci, method: 't' as const } : null));
      series.push(...ciBandSeries({ name: g.name, key: `${mode === 'envelope' ? 'env' : 'ci'}:${i}`, data, ci: bounds, color: color(i) }));
    }
    series.push({
      id: `mean:${i}`, name: g.name, type: 'line', symbol: 'none',
      // [step, mean, n, ci lo, ci hi, min, max]: x and y are the first two, the rest is for the tooltip
      data: g.points.map((p) => [p.step, p.mean, p.n, p.ci?.lo ?? null, p.ci?.hi ?? null, p.min, p.max]),
      encode: { x: 0, y: 1 },
      lineStyle: { width: 2, color: color(i) }, itemStyle: { color: color(i) },
    });
  });
  return {
    animation: false,
    color: OVERLAY_COLORS,
    grid: { left: 56, right: 16, top: 40, bottom: 56 },
    legend: { type: 'scroll', top: 0, data: groups.map((g) => g.name) },
    tooltip: { trigger: 'axis', formatter: tooltip },
    xAxis: { type: 'value', name: 'step', nameLocation: 'middle', nameGap: 24, scale: true },
    yAxis: { type: 'value', scale: true, name: metricKey },
    dataZoom: [{ type: 'inside', filterMode: 'none' }, { type: 'slider', height: 18, bottom: 4, filterMode: 'none' }],
    series: series as EChartsOption['series'],
  };
}

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

function GroupChartImpl({ metricKey, groups, mode, height = 320 }: { metricKey: string; groups: readonly ChartGroup[]; mode: ChartMode; height?: number }) {
  const option = useMemo(() => groupChartOption(metricKey, groups, mode), [metricKey, groups, mode]);
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
    >
      <EChart option={option} height={height} ariaLabel={`${metricKey} of ${groups.length} groups (${MODE_LABELS[mode]})`} testId="group-chart-canvas" data={table} />
    </div>
  );
}

export const GroupChart = memo(GroupChartImpl);
