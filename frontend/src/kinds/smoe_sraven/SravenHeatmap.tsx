// SRAVEN accuracy by M (rows) and top-k (columns), one panel per attention variant; the best k of each
// row is starred. Hover names the run, click opens it.
import { Group, SegmentedControl, SimpleGrid, Stack, Text } from '@mantine/core';
import { memo, useMemo, useState } from 'react';
import { useNavigate } from 'react-router';
import { columnLabel, panelsRange, sravenPanels, type HeatmapMetric, type HeatmapPanel } from '../../lib/heatmap';
import { EChart } from './EChart';
import type { EChartsOption } from './echarts';

function panelOption(panel: HeatmapPanel, range: [number, number], metric: HeatmapMetric): EChartsOption {
  const best = new Set(panel.bestCol.map((x, y) => `${x},${y}`));
  return {
    animation: false,
    title: { text: `attention: ${panel.attention}`, left: 'center', top: 0, textStyle: { fontSize: 13 } },
    grid: { left: 56, right: 12, top: 30, bottom: 70 },
    xAxis: { type: 'category', data: panel.cols.map(columnLabel), name: 'top-k', nameLocation: 'middle', nameGap: 24 },
    yAxis: { type: 'category', data: panel.rows.map(String), name: 'M', nameLocation: 'middle', nameGap: 36 },
    visualMap: {
      dimension: 2, // [x, y, value, runId, experts]: colour by the value, not the last dimension
      min: range[0], max: range[1], calculable: false, orient: 'horizontal', left: 'center', bottom: 0, itemHeight: 120,
      text: [metric === 'ood_acc' ? 'OOD acc' : 'ID acc', ''], inRange: { color: ['#fff5f5', '#ffa94d', '#2f9e44'] },
    },
    tooltip: {
      formatter: (p: unknown) => {
        const [x, y, v, runId, experts] = (p as { data: number[] }).data;
        return `M=${panel.rows[y!]} · top-k=${columnLabel(panel.cols[x!] ?? null)} · experts=${experts ?? '—'}<br/>${metric}=${v!.toFixed(3)}<br/>run #${runId} (click to open)`;
      },
    },
    series: [
      {
        type: 'heatmap',
        data: panel.cells.map((c) => [c.x, c.y, c.value, c.runId, c.numExperts]),
        label: {
          show: true,
          fontSize: 11,
          formatter: (p: unknown) => {
            const [x, y, v] = (p as { data: number[] }).data;
            return `${v!.toFixed(2)}${best.has(`${x},${y}`) ? ' ★' : ''}`;
          },
        },
        emphasis: { itemStyle: { borderColor: '#000', borderWidth: 1 } },
      },
    ],
  };
}

function SravenHeatmapImpl({ results }: { results: readonly { run_id: number; payload: unknown }[] }) {
  const [metric, setMetric] = useState<HeatmapMetric>('ood_acc');
  const navigate = useNavigate();
  const panels = useMemo(() => sravenPanels(results, metric), [results, metric]);
  const range = useMemo(() => panelsRange(panels), [panels]);
  const options = useMemo(() => panels.map((p) => panelOption(p, range, metric)), [panels, range, metric]);
  const on = useMemo(() => ({ click: (p: unknown) => navigate(`/runs/${(p as { data: number[] }).data[3]}`) }), [navigate]);
  if (panels.length === 0) return <Text c="dimmed">No sraven_cell results yet.</Text>;
  return (
    <Stack gap="xs">
      <Group>
        <Text size="sm">Colour</Text>
        <SegmentedControl
          size="xs"
          aria-label="heatmap colour"
          value={metric}
          onChange={(v) => setMetric(v as HeatmapMetric)}
          data={[{ value: 'ood_acc', label: 'OOD accuracy' }, { value: 'test_acc', label: 'ID accuracy' }]}
        />
        <Text size="xs" c="dimmed">★ best top-k for each M</Text>
      </Group>
      <SimpleGrid cols={{ base: 1, md: Math.min(panels.length, 3) }}>
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
    </Stack>
  );
}

export const SravenHeatmap = memo(SravenHeatmapImpl);
