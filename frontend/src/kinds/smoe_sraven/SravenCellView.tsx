import { Group } from '@mantine/core';
import { useMemo } from 'react';
import { EChart } from '../../components/charts/EChart';
import type { EChartsOption } from '../../components/charts/echarts';
import { KeyValues } from '../../components/results/KeyValues';
import type { ResultViewProps } from '../types';
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

/** One SRAVEN cell: its accuracies, and ID (and OOD) accuracy per query-feature slot. */
export function SravenCellView({ payload }: ResultViewProps<'sraven_cell'>) {
  const option = useMemo(() => perFeatureOption(payload), [payload]);
  return (
    <Group align="flex-start">
      <KeyValues
        rows={[
          ['attention', payload.attention],
          ['M', payload.M],
          ['top-k', payload.top_k ?? 'dense'],
          ['experts', payload.num_experts ?? '—'],
          ['ID accuracy', payload.test_acc],
          ['OOD accuracy', payload.ood_acc],
          ['steps', payload.steps],
        ]}
      />
      {payload.per_feature_acc.length > 0 && (
        <div style={{ flex: 1, minWidth: 280 }}>
          <EChart option={option} height={220} ariaLabel="accuracy per feature slot" />
        </div>
      )}
    </Group>
  );
}
