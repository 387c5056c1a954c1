// One Skill-Mix metric by ept (rows) and k (columns), the best ept of each column starred, its 95% interval
// under each value, every figure rounded as the paper's tables (ties to even); hover names the run, click opens it. A pure chart: the table in (shape.ts), picture out.
import { memo, useMemo } from 'react';
import { useNavigate } from 'react-router';
import { EChart } from '../../components/charts/EChart';
import type { EChartsOption } from '../../components/charts/echarts';
import { heatmapCells, METRIC_LABELS, rowLabel, toFixedHalfEven, type Metric, type SkillmixTable } from './shape';
import { bracket } from '../../lib/interval';

export function heatmapOption(table: SkillmixTable, metric: Metric): EChartsOption {
  const cells = heatmapCells(table, metric);
  const best = new Set(table.best[metric].flatMap((rows, x) => rows.map((y) => `${x},${y}`)));
  const ciAt = new Map(cells.map((c) => [`${c.x},${c.y}`, c.ci]));
  const ciText = (x: number, y: number, sep: string) => {
    const ci = ciAt.get(`${x},${y}`);
    return ci ? `${sep}${bracket(ci, (v) => toFixedHalfEven(v, 2))}` : '';
  };
  const values = cells.map((c) => c.value);
  const lo = values.length ? Math.min(...values) : 0;
  const top = values.length ? Math.max(...values) : 1;
  const hi = top === lo ? lo + 1 : top; // a flat table still gets a scale
  return {
    animation: false,
    grid: { left: 110, right: 12, top: 10, bottom: 70 },
    xAxis: { type: 'category', data: table.cols.map((k) => `k=${k}`), name: 'k', nameLocation: 'middle', nameGap: 24 },
    yAxis: { type: 'category', data: table.rows.map((e) => rowLabel(e, table.defaultEpt)), inverse: true },
    visualMap: {
      dimension: 2,
      min: lo,
      max: hi,
      calculable: false,
      orient: 'horizontal',
      left: 'center',
      bottom: 0,
      itemHeight: 120,
      text: [toFixedHalfEven(hi, 2), `${METRIC_LABELS[metric]} ${toFixedHalfEven(lo, 2)}`],
      inRange: { color: ['#fff5f5', '#ffa94d', '#2f9e44'] },
    },
    tooltip: {
      formatter: (p: unknown) => {
        const [x, y, v, runId] = (p as { data: number[] }).data;
        return `${rowLabel(table.rows[y!] ?? null, table.defaultEpt)} · k=${table.cols[x!]}<br/>${METRIC_LABELS[metric]}=${toFixedHalfEven(v!, 3)}${ciText(x!, y!, ' ')}${ciAt.get(`${x},${y}`) ? ' (95%)' : ''}<br/>run ${runId} (click to open)`;
      },
    },
    series: [
      {
        type: 'heatmap',
        data: cells.map((c) => [c.x, c.y, c.value, c.runId]),
        label: {
          show: true,
          fontSize: 11,
          lineHeight: 14, // the interval's line under the value: without it ECharts draws both lines at one height
          formatter: (p: unknown) => {
            const [x, y, v] = (p as { data: number[] }).data;
            return `${toFixedHalfEven(v!, 2)}${best.has(`${x},${y}`) ? ' ★' : ''}${ciText(x!, y!, '\n')}`;
          },
        },
      },
    ],
  };
}

function SkillmixHeatmapImpl({ table, metric }: { table: SkillmixTable; metric: Metric }) {
  const navigate = useNavigate();
  const option = useMemo(() => heatmapOption(table, metric), [table, metric]);
  const on = useMemo(() => ({ click: (p: unknown) => navigate(`/runs/${(p as { data: number[] }).data[3]}`) }), [navigate]);
  return (
    <EChart
      option={option}
      on={on}
      height={Math.max(220, 80 + 34 * table.rows.length)}
      ariaLabel={`${METRIC_LABELS[metric]} heatmap, ept by k`}
      testId="skillmix-heatmap"
    />
  );
}

export const SkillmixHeatmap = memo(SkillmixHeatmapImpl);
