// Parallel coordinates of the sweep's varying params against one final metric, coloured by the metric:
// green at its better end (lib/metricGoal.ts: low for a loss, high for an accuracy).
// A pure chart: axes and rows in (lib/parallel.ts parallelData), picture out.
import { Text } from '@mantine/core';
import { memo, useMemo } from 'react';
import { metricGoal, scaleColours } from '../../lib/metricGoal';
import { parallelRunsTable } from '../../lib/chartTable';
import { colourScale, type ParallelData } from '../../lib/parallel';
import { EChart } from './EChart';
import type { EChartsOption } from './echarts';

/** The ends of the colour legend, high first (as ECharts' `text` wants them): the better one says so. */
function legendText(metric: string): [string, string] {
  const goal = metricGoal(metric);
  return [goal === 'max' ? 'high (better)' : 'high', goal === 'min' ? 'low (better)' : 'low'];
}

// The right margin: the last axis (the metric) draws its tick labels to its right, and the colour legend
// stands right of those; each gets its own room, so the legend never covers the axis' labels.
export const LEGEND_FONT_PX = 10;
export const AXIS_LABEL_ROOM_PX = 64; // the metric axis' tick labels ("0.0123", "1.2e+3") right of its line
export const LEGEND_GAP_PX = 8;

/** The legend's width: its widest end text (about 0.6 em a character) or its bar. */
export function legendWidth(metric: string): number {
  const [high, low] = legendText(metric);
  return Math.max(20, Math.ceil(Math.max(high.length, low.length) * LEGEND_FONT_PX * 0.6));
}

export function parallelOption(data: ParallelData): EChartsOption {
  const scale = colourScale(data.rows.map((r) => r[data.axes.length - 1] as number));
  // the metric is the last axis; better reads as better: green at the low end of a loss, the high of an accuracy
  const metric = data.axes[data.axes.length - 1]?.name ?? '';
  return {
    animation: false,
    parallel: { left: 60, right: AXIS_LABEL_ROOM_PX + LEGEND_GAP_PX + legendWidth(metric) + LEGEND_GAP_PX, top: 40, bottom: 30 },
    parallelAxis: data.axes.map((a) => ({
      dim: a.dim, name: a.name, type: a.type, ...(a.data ? { data: a.data } : {}), ...(a.integer ? { minInterval: 1 } : {}),
      scale: true, nameTextStyle: { fontSize: 11 },
    })),
    visualMap: {
      type: 'continuous', dimension: data.axes.length - 1, min: scale.min, max: scale.max, precision: scale.precision,
      right: LEGEND_GAP_PX, top: 'middle', calculable: true, itemHeight: 120, inRange: { color: scaleColours(metricGoal(metric)) },
      text: legendText(metric), textStyle: { fontSize: LEGEND_FONT_PX },
    },
    tooltip: { formatter: (p: unknown) => `run ${((p as { data: unknown[] }).data.at(-1) as number) ?? ''}` },
    series: [{ type: 'parallel', lineStyle: { width: 1.2, opacity: 0.6 }, data: data.rows }],
  };
}

function ParallelCoordsImpl({ data, metric, onOpenRun }: { data: ParallelData; metric: string; onOpenRun?: (id: number) => void }) {
  const option = useMemo(() => parallelOption(data), [data]);
  const on = useMemo(
    () => ({ click: (p: unknown) => onOpenRun?.((p as { data: unknown[] }).data.at(-1) as number) }),
    [onOpenRun],
  );
  if (data.rows.length === 0) return <Text c="dimmed">No finished run has {metric} yet.</Text>;
  if (data.axes.length < 2) return <Text c="dimmed">The sweep varies no parameter.</Text>;
  return (
    <div data-testid="parallel-colours" data-metric={metric} data-better={metricGoal(metric) === 'min' ? 'low' : metricGoal(metric) === 'max' ? 'high' : 'unknown'}>
      <EChart option={option} on={on} height={320} ariaLabel={`parallel coordinates of sweep parameters against ${metric}`} testId="parallel-chart" data={() => parallelRunsTable(data.axes, data.rows)} />
    </div>
  );
}

export const ParallelCoords = memo(ParallelCoordsImpl);
