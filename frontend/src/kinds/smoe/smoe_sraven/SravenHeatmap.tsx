// SRAVEN accuracy by M (rows) and top-k (columns), one panel per attention variant; the best k of each
// row is starred; under each value its 95% interval [lo, hi] (heatmap.ts), and for a cell several seeds
// fill, their number n (the value is their mean, the interval Student-t over them). Hover names the run, click opens
// it. A pure chart: panels in (heatmap.ts), picture out.
import { SimpleGrid } from '@mantine/core';
import { memo, useMemo } from 'react';
import { EChart } from '../../../components/charts/EChart';
import type { EChartsOption } from '../../../components/charts/echarts';
import { bracket, formatWithInterval } from '../../../lib/interval';
import { columnLabel, type HeatmapMetric, type HeatmapPanel } from './heatmap';

export function panelOption(panel: HeatmapPanel, range: [number, number], metric: HeatmapMetric): EChartsOption {
  const best = new Set(panel.bestCol.map((x, y) => `${x},${y}`));
  const ciAt = new Map(panel.cells.map((c) => [`${c.x},${c.y}`, c]));
  return {
    animation: false,
    title: { text: `attention: ${panel.attention}`, left: 'center', top: 0, textStyle: { fontSize: 13 } },
    grid: { left: 56, right: 12, top: 30, bottom: 70 },
    xAxis: { type: 'category', data: panel.cols.map(columnLabel), name: 'top-k', nameLocation: 'middle', nameGap: 24 },
    yAxis: { type: 'category', data: panel.rows.map(String), name: 'M', nameLocation: 'middle', nameGap: 36 },
    visualMap: {
      dimension: 2, // [x, y, value, runId, experts]: colour by the value, not the last dimension
      min: range[0], max: range[1], calculable: false, orient: 'horizontal', left: 'center', bottom: 0, itemHeight: 120,
      // the ends carry their values (the metric's name is the legend's title): the high end first
      text: [`${range[1].toFixed(2)}`, `${metric === 'ood_acc' ? 'OOD acc' : 'ID acc'} ${range[0].toFixed(2)}`], inRange: { color: ['#fff5f5', '#ffa94d', '#2f9e44'] },
    },
    tooltip: {
      formatter: (p: unknown) => {
        const [x, y, v, runId, experts] = (p as { data: number[] }).data;
        const cell = ciAt.get(`${x},${y}`);
        const ci = cell?.ci ?? null;
        const how = ci ? ` (95% ${ci.method === 'wilson' ? 'Wilson' : `t over ${cell!.n} runs`})` : cell && cell.n > 1 ? ` (mean of ${cell.n})` : '';
        return `M=${panel.rows[y!]} · top-k=${columnLabel(panel.cols[x!] ?? null)} · experts=${experts ?? '—'}<br/>${metric}=${formatWithInterval(v!, ci, 3)}${how}<br/>run ${runId} (click to open)`;
      },
    },
    series: [
      {
        type: 'heatmap',
        data: panel.cells.map((c) => [c.x, c.y, c.value, c.runId, c.numExperts]),
        label: {
          show: true,
          fontSize: 11,
          lineHeight: 14, // the interval's line under the value: without it ECharts draws both lines at one height
          formatter: (p: unknown) => {
            const [x, y, v] = (p as { data: number[] }).data;
            const cell = ciAt.get(`${x},${y}`);
            const ci = cell?.ci ?? null;
            // a mean over seeds says over how many: its interval is a Student-t one over n runs
            const n = cell && cell.n > 1 ? ` n=${cell.n}` : '';
            return `${v!.toFixed(2)}${best.has(`${x},${y}`) ? ' ★' : ''}${ci ? `\n${bracket(ci, (b) => b.toFixed(2))}${n}` : n ? `\n${n.trim()}` : ''}`;
          },
        },
        emphasis: { itemStyle: { borderColor: '#000', borderWidth: 1 } },
      },
    ],
  };
}

interface Props {
  panels: readonly HeatmapPanel[];
  /** colour scale shared by all panels (panelsRange) */
  range: [number, number];
  metric: HeatmapMetric;
  onOpenRun: (runId: number) => void;
}

function SravenHeatmapImpl({ panels, range, metric, onOpenRun }: Props) {
  const options = useMemo(() => panels.map((p) => panelOption(p, range, metric)), [panels, range, metric]);
  const on = useMemo(() => ({ click: (p: unknown) => onOpenRun((p as { data: number[] }).data[3]!) }), [onOpenRun]);
  return (
    <SimpleGrid cols={{ base: 1, md: Math.min(panels.length, 3) }} data-colour-range={range.join(',')}>
      {panels.map((p, i) => (
        <EChart
          key={p.attention}
          option={options[i]!}
          on={on}
          height={Math.max(240, 60 + 36 * p.rows.length + 70)}
          ariaLabel={`${metric} heatmap for attention ${p.attention}`}
          testId="sraven-heatmap"
        />
      ))}
    </SimpleGrid>
  );
}

export const SravenHeatmap = memo(SravenHeatmapImpl);
