import { Badge } from '@mantine/core';

export const STATUS_COLOURS: Record<string, string> = {
  queued: 'gray',
  running: 'blue',
  succeeded: 'green',
  failed: 'red',
  cancelled: 'yellow',
};

export function StatusChip({ status, size = 'sm' }: { status: string; size?: 'xs' | 'sm' | 'md' }) {
  return (
    <Badge color={STATUS_COLOURS[status] ?? 'gray'} variant={status === 'running' ? 'filled' : 'light'} size={size} data-status={status}>
      {status}
    </Badge>
  );
}

export function StatusCounts({ counts }: { counts: Record<string, number> }) {
  const entries = Object.entries(counts).filter(([, n]) => n > 0);
  return (
    <>
      {entries.map(([s, n]) => (
        <Badge key={s} color={STATUS_COLOURS[s] ?? 'gray'} variant="light" size="sm" mr={4}>
          {n} {s}
        </Badge>
      ))}
    </>
  );
}
