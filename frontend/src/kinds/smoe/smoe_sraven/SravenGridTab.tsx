// The experiment page's "SRAVEN grid" tab: the experiment's sraven_cell results as heatmaps (rows M,
// columns top-k, one panel per attention), coloured by OOD or ID accuracy.
import { Group, SegmentedControl, Stack, Text } from '@mantine/core';
import { useCallback, useMemo, useState } from 'react';
import { useNavigate } from 'react-router';
import { QueryState } from '../../../components/common/QueryState';
import { IntervalCaption } from '../../../components/results/IntervalCaption';
import { useExperimentResults } from '../../../hooks/experiments';
import type { ExperimentViewProps } from '../../types';
import { panelsRange, sravenCaption, sravenCells, sravenPanels, type HeatmapMetric } from './heatmap';
import { SravenHeatmap } from './SravenHeatmap';

const METRICS: { value: HeatmapMetric; label: string }[] = [
  { value: 'ood_acc', label: 'OOD accuracy' },
  { value: 'test_acc', label: 'ID accuracy' },
];

export function SravenGridTab({ experiment, live }: ExperimentViewProps) {
  const results = useExperimentResults(experiment.id, 'sraven_cell', live);
  const [metric, setMetric] = useState<HeatmapMetric>('ood_acc');
  const navigate = useNavigate();
  const cells = useMemo(() => sravenCells(results.data ?? []), [results.data]);
  const panels = useMemo(() => sravenPanels(cells, metric), [cells, metric]);
  const caption = useMemo(() => sravenCaption(cells, panels, metric), [cells, panels, metric]);
  const range = useMemo(() => panelsRange(panels), [panels]);
  const openRun = useCallback((runId: number) => navigate(`/runs/${runId}`), [navigate]);
  return (
    <QueryState isPending={results.isPending} error={results.error}>
      {() =>
        panels.length === 0 ? (
          <Text c="dimmed">No sraven_cell results yet{live ? ': cells appear as their runs finish' : ''}.</Text>
        ) : (
          <Stack gap="xs">
            <Group>
              <Text size="sm">Colour</Text>
              <SegmentedControl
                size="xs"
                aria-label="heatmap colour"
                value={metric}
                onChange={(v) => setMetric(METRICS.find((m) => m.value === v)?.value ?? 'ood_acc')}
                data={METRICS}
              />
              <Text size="xs" c="dimmed">★ best top-k for each M</Text>
            </Group>
            <SravenHeatmap panels={panels} range={range} metric={metric} onOpenRun={openRun} />
            <IntervalCaption text={caption} />
          </Stack>
        )
      }
    </QueryState>
  );
}
