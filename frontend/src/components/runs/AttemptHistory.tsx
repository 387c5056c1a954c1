// The run page's attempt history: every attempt a worker claimed, when, for how long (downtime between
// attempts excluded) and how it ended, lost and released ones included.
import { Badge, Table, Text } from '@mantine/core';
import type { Run, RunAttempt } from '../../api/types';
import { attemptSeconds, OUTCOME_COLOURS, OUTCOME_HELP, outcomeLabel } from '../../lib/attempts';
import { formatDuration } from '../../lib/eta';
import { useNow } from './Eta';
import { isoDateTime } from '../../lib/plainFormat';

function when(t: string | null): string {
  return t ? isoDateTime(t) : '—';
}

export function AttemptHistory({ run, attempts }: { run: Run; attempts: readonly RunAttempt[] }) {
  const now = useNow(run.held);
  if (!attempts.length)
    return (
      <Text c="dimmed" size="sm" data-testid="attempts-empty">
        No attempt yet: {run.status === 'queued' ? 'the run waits for a worker.' : 'no worker claimed this run.'}
      </Text>
    );
  return (
    <Table striped withTableBorder data-testid="attempts">
      <Table.Thead>
        <Table.Tr>
          <Table.Th>Attempt</Table.Th>
          <Table.Th>Worker</Table.Th>
          <Table.Th>Started</Table.Th>
          <Table.Th>Ended</Table.Th>
          <Table.Th>Duration</Table.Th>
          <Table.Th>Outcome</Table.Th>
        </Table.Tr>
      </Table.Thead>
      <Table.Tbody>
        {attempts.map((a) => (
          <Table.Tr key={a.attempt} data-testid={`attempt-${a.attempt}`}>
            <Table.Td>{a.attempt}</Table.Td>
            <Table.Td>{a.worker ?? '—'}</Table.Td>
            <Table.Td>{when(a.started_at)}</Table.Td>
            <Table.Td>{a.outcome === 'running' ? '—' : when(a.ended_at)}</Table.Td>
            <Table.Td>{formatDuration(attemptSeconds(a, run, now))}</Table.Td>
            <Table.Td>
              <Badge variant="light" color={OUTCOME_COLOURS[a.outcome]} title={OUTCOME_HELP[a.outcome]} data-testid="attempt-outcome">
                {outcomeLabel(a, run)}
              </Badge>
            </Table.Td>
          </Table.Tr>
        ))}
      </Table.Tbody>
    </Table>
  );
}
