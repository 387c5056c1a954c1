// A figure: its series as lines over steps, each line titled with its run, key and steps (hovering a line
// says what it shows), with the block's caption (frozen at / live as of, its runs).
import { Stack, Text } from '@mantine/core';
import type { ReportBlockData } from '../../api/types';
import { Caption, NotVisible } from '../Caption';
import type { ReportBlockType } from '../types';

const W = 640;
const H = 280;
const PAD = 40;
const COLORS = ['#1f77b4', '#ff7f0e', '#2ca02c', '#d62728', '#9467bd', '#8c564b', '#e377c2', '#7f7f7f'];

type Series = NonNullable<ReportBlockData['series']>[number];

export function describe(s: Series): string {
  const steps = s.points.map((p) => p[0]);
  const span = steps.length ? `steps ${Math.min(...steps)}-${Math.max(...steps)}` : 'no points';
  return `${s.label}: run ${s.run_id}, ${s.key}, ${span} (${steps.length} points)`;
}

function Lines({ series, log }: { series: Series[]; log: boolean }) {
  const pts = series.flatMap((s) => s.points).filter((p): p is [number, number] => p[1] !== null && (!log || p[1] > 0));
  if (!pts.length) return <Text size="sm">no points</Text>;
  const f = (v: number) => (log ? Math.log10(v) : v);
  const xs = pts.map((p) => p[0]);
  const ys = pts.map((p) => f(p[1]));
  const [x0, x1, y0, y1] = [Math.min(...xs), Math.max(...xs), Math.min(...ys), Math.max(...ys)];
  const x = (v: number) => PAD + ((v - x0) / (x1 - x0 || 1)) * (W - 2 * PAD);
  const y = (v: number) => H - PAD - ((f(v) - y0) / (y1 - y0 || 1)) * (H - 2 * PAD);
  return (
    <svg viewBox={`0 0 ${W} ${H}`} width="100%" role="img" aria-label="figure">
      <path d={`M${PAD},${PAD}V${H - PAD}H${W - PAD}`} stroke="#888" fill="none" />
      <text x={PAD - 4} y={PAD} textAnchor="end" fontSize="10">{(log ? 10 ** y1 : y1).toPrecision(3)}</text>
      <text x={PAD - 4} y={H - PAD} textAnchor="end" fontSize="10">{(log ? 10 ** y0 : y0).toPrecision(3)}</text>
      <text x={PAD} y={H - PAD + 14} fontSize="10">{x0}</text>
      <text x={W - PAD} y={H - PAD + 14} textAnchor="end" fontSize="10">{x1}</text>
      {series.map((s, i) => {
        const d = s.points
          .filter((p): p is [number, number] => p[1] !== null && (!log || p[1] > 0))
          .map((p, j) => `${j ? 'L' : 'M'}${x(p[0]).toFixed(1)},${y(p[1]).toFixed(1)}`)
          .join(' ');
        return (
          <g key={`${s.run_id}:${s.key}`} data-testid="figure-line">
            <title>{describe(s)}</title>
            <path d={d} stroke={COLORS[i % COLORS.length]} strokeWidth={1.5} fill="none" />
          </g>
        );
      })}
    </svg>
  );
}

export const block: ReportBlockType<'figure'> = {
  type: 'figure',
  label: 'Figure',
  View: ({ block, data }) => (
    <Stack gap={4}>
      <Text fw={600}>{block.title || block.metrics.join(', ')}</Text>
      {!data ? null : !data.visible ? (
        <NotVisible />
      ) : (
        <>
          <Lines series={data.series ?? []} log={block.log_scale ?? false} />
          <Caption data={data} />
        </>
      )}
    </Stack>
  ),
};
