// Which ECharts module an option needs, decided without importing ECharts (EChart.tsx imports this
// statically: importing echarts.ts there would load ECharts with every page that has a chart).
import type { EChartsOption } from './echarts';

/** Option keys drawn by components of echartsFull.ts only. */
const FULL_COMPONENTS = ['visualMap', 'parallel', 'parallelAxis', 'toolbox'];

/** Whether an option needs echartsFull.ts: a series other than a line, a mark point or mark line, or a
 *  component above. */
export function needsFullECharts(option: EChartsOption): boolean {
  const o = option as Record<string, unknown>;
  if (FULL_COMPONENTS.some((k) => o[k] !== undefined)) return true;
  const series = o.series === undefined ? [] : Array.isArray(o.series) ? o.series : [o.series];
  return series.some(
    (s: { type?: string; markPoint?: unknown; markLine?: unknown }) =>
      (s.type ?? 'line') !== 'line' || s.markPoint !== undefined || s.markLine !== undefined,
  );
}
