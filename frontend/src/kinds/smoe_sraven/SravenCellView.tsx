import { Group } from '@mantine/core';
import { useMemo } from 'react';
import { EChart } from '../charts/EChart';
import type { EChartsOption } from '../charts/echarts';
import { KeyValues } from './KeyValues';
import type { ResultViewProps } from './registry';

/** One SRAVEN cell: its accuracies, and ID (and OOD) accuracy per query-feature slot. */
export function SravenCellView({ payload }: ResultViewProps) {
  const perFeature = (payload.per_feature_acc as number[] | undefined) ?? [];
  const oodPerFeature = (payload.ood_per_feature_acc as number[] | null | undefined) ?? null;
  const option = useMemo<EChartsOption>(
    () => ({
      animation: false,
      grid: { left: 40, right: 10, top: 30, bottom: 30 },
      legend: { top: 0 },
      tooltip: { trigger: 'axis', valueFormatter: (v: unknown) => (typeof v === 'number' ? v.toFixed(3) : String(v)) },
      xAxis: { type: 'category', data: perFeature.map((_, i) => `feature ${i + 1}`) },
      yAxis: { type: 'value', min: 0, max: 1 },
      series: [
        { name: 'ID', type: 'bar', data: perFeature, barMaxWidth: 32 },
        ...(oodPerFeature ? [{ name: 'OOD', type: 'bar', data: oodPerFeature, barMaxWidth: 32 }] : []),
      ],
    }),
    [perFeature, oodPerFeature],
  );
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
      {perFeature.length > 0 && (
        <div style={{ flex: 1, minWidth: 280 }}>
          <EChart option={option} height={220} ariaLabel="accuracy per feature slot" />
        </div>
      )}
    </Group>
  );
}
