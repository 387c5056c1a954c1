// The train-k x eval-k' matrix of one panel (matrix.ts): rows train k, columns k', colour = the score;
// the diagonal (k' = the k the model was trained at) is outlined and marked ◆, the best k' of each row
// starred; under each value its 95% interval [lo, hi] (matrix.ts). A pure chart: panel in, picture out; a
// click opens the run of the cell.
import { memo, useMemo } from 'react';
import { EChart } from '../../../components/charts/EChart';
import type { EChartsOption } from '../../../components/charts/echarts';
import { bracket, formatWithInterval } from '../../../lib/interval';
import { matrixRange, rowLabel, type MatrixPanel } from './matrix';

/** colours from worse to better: the scale flips for a lower-is-better score (perplexity) */
const SCALE = ['#fff5f5', '#ffa94d', '#2f9e44'];
const DIAGONAL_BORDER = '#1c7ed6';

export function matrixOption(panel: MatrixPanel): EChartsOption {
  const [lo, hi] = matrixRange(panel);
  const best = new Set(panel.bestCol.map((x, y) => `${x},${y}`));
  const digits = hi - lo < 0.05 ? 4 : hi < 10 ? 3 : 1;
  const ciAt = new Map(panel.cells.map((c) => [`${c.x},${c.y}`, c.ci]));
  // the interval's ends take two digits less than the value (a width of ±0.05 needs no fourth digit)
  const ciDigits = Math.max(2, digits - 1);
  return {
    animation: false,
    title: { text: panel.title, left: 'center', top: 0, textStyle: { fontSize: 13 } },
    grid: { left: 60, right: 12, top: 30, bottom: 70 },
    xAxis: { type: 'category', data: panel.cols.map(String), name: "eval k'", nameLocation: 'middle', nameGap: 24 },
    // inverse: the first train k on top, as a matrix reads
    yAxis: { type: 'category', inverse: true, data: panel.rows.map(rowLabel), name: 'train k', nameLocation: 'middle', nameGap: 44 },
    visualMap: {
      dimension: 2,
      min: lo,
      max: hi,
      calculable: false,
      orient: 'horizontal',
      left: 'center',
      bottom: 0,
      itemHeight: 120,
      text: [hi.toFixed(digits), `${panel.score} ${lo.toFixed(digits)}`],
      inRange: { color: panel.higherIsBetter ? SCALE : [...SCALE].reverse() },
    },
    tooltip: {
      formatter: (p: unknown) => {
        const [x, y, v, runId, n] = (p as { value: number[] }).value; // data is {value, itemStyle}: value holds the numbers
        const diag = panel.diagonal.has(`${x},${y}`) ? ' (trained k)' : '';
        const ci = ciAt.get(`${x},${y}`) ?? null;
        const interval = ci ? ` (95% ${ci.method === 'wilson' ? 'Wilson' : 't over runs'})` : '';
        return `train ${rowLabel(panel.rows[y!] ?? null)} · k'=${panel.cols[x!]}${diag}<br/>${panel.score}=${formatWithInterval(v!, ci, digits)}${interval}${n! > 1 ? ` (mean of ${n})` : ''}<br/>run ${runId} (click to open)`;
      },
    },
    series: [
      {
        type: 'heatmap',
        data: panel.cells.map((c) => ({
          value: [c.x, c.y, c.value, c.runId, c.n],
          itemStyle: panel.diagonal.has(`${c.x},${c.y}`) ? { borderColor: DIAGONAL_BORDER, borderWidth: 3 } : undefined,
        })),
        label: {
          show: true,
          fontSize: 11,
          lineHeight: 14, // the interval's line under the value: without it ECharts draws both lines at one height
          formatter: (p: unknown) => {
            const [x, y, v] = (p as { value: number[] }).value;
            const key = `${x},${y}`;
            const ci = ciAt.get(key) ?? null;
            const interval = ci ? `\n${bracket(ci, (b) => b.toFixed(ciDigits))}` : '';
            return `${panel.diagonal.has(key) ? '◆ ' : ''}${v!.toFixed(digits)}${best.has(key) ? ' ★' : ''}${interval}`;
          },
        },
        emphasis: { itemStyle: { borderColor: '#000', borderWidth: 1 } },
      },
    ],
  };
}

interface Props {
  panel: MatrixPanel;
  onOpenRun: (runId: number) => void;
}

function TopkMatrixChartImpl({ panel, onOpenRun }: Props) {
  const option = useMemo(() => matrixOption(panel), [panel]);
  const on = useMemo(() => ({ click: (p: unknown) => onOpenRun((p as { value: number[] }).value[3]!) }), [onOpenRun]);
  return (
    <EChart
      option={option}
      on={on}
      height={Math.max(220, 60 + 40 * panel.rows.length + 70)}
      ariaLabel={`train k by eval k' matrix: ${panel.title}`}
      testId="topk-matrix"
    />
  );
}

export const TopkMatrixChart = memo(TopkMatrixChartImpl);
