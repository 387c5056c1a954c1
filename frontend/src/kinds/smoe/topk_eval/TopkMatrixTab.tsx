// The experiment page's "Top-k matrix" tab: every topk_eval_point of the experiment as the train-k x
// eval-k' matrix and the lines of score against k' (one panel per family, score and task).
import { Group, SegmentedControl, Stack, Text } from '@mantine/core';
import { useCallback, useMemo, useState } from 'react';
import { useNavigate } from 'react-router';
import { QueryState } from '../../../components/common/QueryState';
import { IntervalCaption } from '../../../components/results/IntervalCaption';
import { useExperimentResults } from '../../../hooks/experiments';
import type { ExperimentViewProps } from '../../types';
import { topkMatrices, topkPoints, type MatrixMetric } from './matrix';
import { TopkLinesChart } from './TopkLinesChart';
import { TopkMatrixChart } from './TopkMatrixChart';

const METRICS: { value: MatrixMetric; label: string }[] = [
  { value: 'value', label: 'score' },
  { value: 'ood_value', label: 'OOD accuracy' },
];

export function TopkMatrixTab({ experiment, live }: ExperimentViewProps) {
  const results = useExperimentResults(experiment.id, 'topk_eval_point', live);
  const [metric, setMetric] = useState<MatrixMetric>('value');
  const navigate = useNavigate();
  const points = useMemo(() => topkPoints(results.data ?? []), [results.data]);
  const panels = useMemo(() => topkMatrices(points, metric), [points, metric]);
  const hasOod = useMemo(() => points.some((p) => p.payload.ood_value !== null && p.payload.ood_value !== undefined), [points]);
  const openRun = useCallback((runId: number) => navigate(`/runs/${runId}`), [navigate]);
  return (
    <QueryState isPending={results.isPending} error={results.error}>
      {() =>
        panels.length === 0 ? (
          <Text c="dimmed">No topk_eval_point results yet{live ? ': the matrix fills as k\u2032 are evaluated' : ''}.</Text>
        ) : (
          <Stack gap="xs">
            <Group>
              {hasOod && (
                <SegmentedControl
                  size="xs"
                  aria-label="matrix colour"
                  value={metric}
                  onChange={(v) => setMetric(METRICS.find((m) => m.value === v)?.value ?? 'value')}
                  data={METRICS}
                />
              )}
              <Text size="xs" c="dimmed">◆ trained k (diagonal) · ★ best k′ of each train k</Text>
            </Group>
            {panels.map((panel) => (
              <Stack key={panel.key} gap={4}>
                <TopkMatrixChart panel={panel} onOpenRun={openRun} />
                <IntervalCaption text={panel.caption} />
                <TopkLinesChart panel={panel} />
              </Stack>
            ))}
          </Stack>
        )
      }
    </QueryState>
  );
}
