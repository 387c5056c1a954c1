// The experiment page's "CAP curves" tab: the experiment's cap_curve results as Figure 2, with a toggle
// between the protocols and their average (the paper's main figure averages mean, max and sum).
import { Group, SegmentedControl, Stack, Text } from '@mantine/core';
import { useMemo, useState } from 'react';
import { QueryState } from '../../components/common/QueryState';
import { useExperimentResults } from '../../hooks/experiments';
import type { ExperimentViewProps } from '../types';
import { CapCurvesChart } from './CapCurvesChart';
import { capProtocols, capSeries, type ProtocolChoice } from './shape';

const LABELS: Record<ProtocolChoice, string> = { average: 'average', mean: 'mean CAP', max: 'max CAP', sum: 'sum CAP' };

export function CapCurvesTab({ experiment, live }: ExperimentViewProps) {
  const results = useExperimentResults(experiment.id, 'cap_curve', live);
  const [protocol, setProtocol] = useState<ProtocolChoice>('average');
  const protocols = useMemo(() => capProtocols(results.data ?? []), [results.data]);
  const series = useMemo(() => capSeries(results.data ?? [], protocol), [results.data, protocol]);
  const choices: ProtocolChoice[] = protocols.length > 1 ? ['average', ...protocols] : protocols;
  return (
    <QueryState isPending={results.isPending} error={results.error}>
      {() =>
        series.length === 0 ? (
          <Text c="dimmed">No cap_curve results yet{live ? ': curves appear as their runs finish' : ''}.</Text>
        ) : (
          <Stack gap="xs">
            <Group>
              <Text size="sm">Protocol</Text>
              <SegmentedControl
                size="xs"
                aria-label="CAP protocol"
                value={protocol}
                onChange={(v) => setProtocol(choices.find((c) => c === v) ?? 'average')}
                data={choices.map((c) => ({ value: c, label: LABELS[c] }))}
              />
            </Group>
            <CapCurvesChart series={series} title={`Accuracy under CAP (${LABELS[protocol]})`} />
          </Stack>
        )
      }
    </QueryState>
  );
}
