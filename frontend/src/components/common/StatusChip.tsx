import { Badge } from '@mantine/core';
import { isRunStatus, STATUS_COLOURS, type RunStatus } from '../../lib/runStatus';

/** `status_counts` keys are plain strings in the API: a status this build does not know is grey. */
const colourOf = (status: string) => (isRunStatus(status) ? STATUS_COLOURS[status] : 'gray');

export function StatusChip({ status, size = 'sm' }: { status: RunStatus; size?: 'xs' | 'sm' | 'md' }) {
  return (
    <Badge color={colourOf(status)} variant={status === 'running' ? 'filled' : 'light'} size={size} data-status={status}>
      {status}
    </Badge>
  );
}

export function StatusCounts({ counts }: { counts: Record<string, number> }) {
  const entries = Object.entries(counts).filter(([, n]) => n > 0);
  return (
    <>
      {entries.map(([s, n]) => (
        <Badge key={s} color={colourOf(s)} variant="light" size="sm" mr={4}>
          {n} {s}
        </Badge>
      ))}
    </>
  );
}
