// Figure 3 of paper 001 as a heatmap: reasoning steps (rows, step 1 on top) x skills (columns), colour =
// mean router weight of the task's instances; beside it the mean stop gate of each step. Cells of the
// skill a step should use (where known: the synthetic suite) carry a ★. A pure chart: data in, picture out.
import { memo, useMemo } from 'react';
import { EChart } from '../../components/charts/EChart';
import type { EChartsOption } from '../../components/charts/echarts';
import { routingCells, type TaskRouting } from './shape';

const WEIGHT_COLOURS = ['#f8f9fa', '#74c0fc', '#1864ab'];
const GATE_COLOURS = ['#fff4e6', '#ffa94d', '#d9480f'];

export function routingOption(task: TaskRouting, skills: readonly string[]): EChartsOption {
  const steps = task.weights.map((_, i) => `step ${i + 1}`);
  const cells = routingCells(task, skills);
  const gates = task.stop_gates ?? null;
  const series: Record<string, unknown>[] = [
    {
      type: 'heatmap',
      xAxisIndex: 0,
      yAxisIndex: 0,
      data: cells.map((c) => [c.x, c.y, c.value, c.expected ? 1 : 0]),
      label: {
        show: true,
        fontSize: 11,
        formatter: (p: unknown) => {
          const [, , v, expected] = (p as { data: number[] }).data;
          return `${v!.toFixed(2)}${expected ? ' ★' : ''}`;
        },
      },
    },
  ];
  if (gates)
    series.push({
      type: 'heatmap',
      xAxisIndex: 1,
      yAxisIndex: 1,
      data: gates.map((g, i) => [0, i, g]),
      label: { show: true, fontSize: 11, formatter: (p: unknown) => (p as { data: number[] }).data[2]!.toFixed(2) },
    });
  return {
    animation: false,
    tooltip: {
      formatter: (p: unknown) => {
        const { seriesIndex, data } = p as { seriesIndex: number; data: number[] };
        const step = steps[data[1]!];
        return seriesIndex === 0
          ? `${step} · ${skills[data[0]!]}<br/>mean router weight ${data[2]!.toFixed(3)}${data[3] ? '<br/>★ the expected skill' : ''}`
          : `${step}<br/>mean stop gate ${data[2]!.toFixed(3)}`;
      },
    },
    grid: [
      { left: 64, right: gates ? 110 : 16, top: 10, bottom: 64 },
      ...(gates ? [{ right: 16, width: 70, top: 10, bottom: 64 }] : []),
    ],
    xAxis: [
      { type: 'category', gridIndex: 0, data: [...skills], axisLabel: { interval: 0, rotate: skills.length > 6 ? 30 : 0 } },
      ...(gates ? [{ type: 'category' as const, gridIndex: 1, data: ['stop gate'] }] : []),
    ],
    yAxis: [
      { type: 'category', gridIndex: 0, data: steps, inverse: true },
      ...(gates ? [{ type: 'category' as const, gridIndex: 1, data: steps, inverse: true, axisLabel: { show: false } }] : []),
    ],
    visualMap: [
      { seriesIndex: 0, dimension: 2, min: 0, max: 1, orient: 'horizontal', left: 64, bottom: 0, itemHeight: 120, calculable: false, text: ['weight 1', '0'], inRange: { color: WEIGHT_COLOURS } },
      ...(gates
        ? [{ seriesIndex: 1, dimension: 2, min: 0, max: 1, orient: 'horizontal' as const, right: 0, bottom: 0, itemHeight: 60, calculable: false, text: ['gate 1', '0'], inRange: { color: GATE_COLOURS } }]
        : []),
    ],
    series,
  };
}

interface Props {
  task: TaskRouting;
  skills: readonly string[];
}

function RoutingHeatmapImpl({ task, skills }: Props) {
  const option = useMemo(() => routingOption(task, skills), [task, skills]);
  return (
    <EChart
      option={option}
      height={110 + 44 * task.weights.length}
      ariaLabel={`routing heatmap of ${task.task}: steps by skills, stop gate beside`}
      testId="routing-heatmap"
    />
  );
}

export const RoutingHeatmap = memo(RoutingHeatmapImpl);
