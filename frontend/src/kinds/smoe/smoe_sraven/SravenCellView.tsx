import { Group, Stack } from '@mantine/core';
import { useMemo } from 'react';
import { EChart } from '../../../components/charts/EChart';
import type { EChartsOption } from '../../../components/charts/echarts';
import { IntervalCaption } from '../../../components/results/IntervalCaption';
import { KeyValues } from '../../../components/results/KeyValues';
import { formatWithInterval, intervalCaption, wilson } from '../../../lib/interval';
import type { ResultViewProps } from '../../types';
import type { SravenCell } from './heatmap';

/** Bars of ID (and OOD) accuracy per query-feature slot of one cell. */
export function perFeatureOption(cell: Pick<SravenCell, 'per_feature_acc' | 'ood_per_feature_acc'>): EChartsOption {
  const ood = cell.ood_per_feature_acc ?? null;
  return {
    animation: false,
    grid: { left: 40, right: 10, top: 30, bottom: 30 },
    legend: { top: 0 },
    tooltip: { trigger: 'axis', valueFormatter: (v: unknown) => (typeof v === 'number' ? v.toFixed(3) : String(v)) },
    xAxis: { type: 'category', data: cell.per_feature_acc.map((_, i) => `feature ${i + 1}`) },
    yAxis: { type: 'value', min: 0, max: 1 },
    series: [
      { name: 'ID', type: 'bar', data: cell.per_feature_acc, barMaxWidth: 32 },
      ...(ood ? [{ name: 'OOD', type: 'bar' as const, data: ood, barMaxWidth: 32 }] : []),
    ],
  };
}

/** "0.812 [0.760, 0.856]": an accuracy and its 95% Wilson interval over `n` problems; the value alone without n. */
function accuracyText(value: number | null | undefined, n: number | null | undefined): string | number | null {
  if (typeof value !== 'number') return value ?? null;
  const ci = wilson(value, n);
  return ci ? formatWithInterval(value, ci, 3) : value;
}

/** One SRAVEN cell: its accuracies with their 95% intervals, and ID (and OOD) accuracy per query-feature slot. */
export function SravenCellView({ payload }: ResultViewProps<'sraven_cell'>) {
  const option = useMemo(() => perFeatureOption(payload), [payload]);
  const caption = intervalCaption({ sizes: [payload.test_size, payload.ood_size], missing: !payload.test_size });
  return (
    <Group align="flex-start">
      <Stack gap={4}>
        <KeyValues
          rows={[
            ['attention', payload.attention],
            ['M', payload.M],
            ['top-k', payload.top_k ?? 'dense'],
            ['experts', payload.num_experts ?? '—'],
            ['ID accuracy', accuracyText(payload.test_acc, payload.test_size)],
            ['OOD accuracy', accuracyText(payload.ood_acc, payload.ood_size)],
            ['steps', payload.steps],
          ]}
        />
        <IntervalCaption text={caption} />
      </Stack>
      {payload.per_feature_acc.length > 0 && (
        <div style={{ flex: 1, minWidth: 280 }}>
          <EChart option={option} height={220} ariaLabel="accuracy per feature slot" />
        </div>
      )}
    </Group>
  );
}
