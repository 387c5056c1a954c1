// The experiment page's "Routing" tab: the routing analysis (Figure 3) of any of the experiment's runs.
import { Group, Select, Stack, Text } from '@mantine/core';
import { useMemo, useState } from 'react';
import { QueryState } from '../../components/common/QueryState';
import { useExperimentResults } from '../../hooks/experiments';
import type { ExperimentViewProps } from '../types';
import { RoutingPanel } from './RoutingPanel';
import { routingResults } from './shape';

export function RoutingTab({ experiment, live }: ExperimentViewProps) {
  const results = useExperimentResults(experiment.id, 'routing', live);
  const records = useMemo(() => routingResults(results.data ?? []), [results.data]);
  const [runId, setRunId] = useState<string | null>(null);
  const chosen = records.find((r) => String(r.runId) === runId) ?? records[0];
  return (
    <QueryState isPending={results.isPending} error={results.error}>
      {() =>
        !chosen ? (
          <Text c="dimmed">No routing results yet{live ? ': they appear as runs finish' : ''}.</Text>
        ) : (
          <Stack gap="xs">
            <Group>
              <Select
                size="xs"
                label="Run"
                aria-label="routing run"
                data={records.map((r) => ({ value: String(r.runId), label: `run ${r.runId} · ${r.payload.label}` }))}
                value={String(chosen.runId)}
                onChange={setRunId}
                allowDeselect={false}
                w={280}
              />
            </Group>
            <RoutingPanel key={chosen.runId} payload={chosen.payload} />
          </Stack>
        )
      }
    </QueryState>
  );
}
