import { Badge } from '@mantine/core';
import type { CSSProperties } from 'react';
import { isRunStatus, RUN_STATUSES, STATUS_COLOURS, type RunStatus } from '../../lib/runStatus';

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

// Mantine's extra-small light badge, as plain style: a table draws thousands of these while it scrolls
const TAG: CSSProperties = {
  display: 'inline-block', height: 16, lineHeight: '16px', padding: '0 6px', borderRadius: 32,
  fontSize: 9, fontWeight: 700, letterSpacing: 0.25, textTransform: 'uppercase', whiteSpace: 'nowrap',
};
const tagStyle = (status: RunStatus): CSSProperties => {
  const c = STATUS_COLOURS[status];
  return status === 'running'
    ? { ...TAG, background: `var(--mantine-color-${c}-filled)`, color: 'var(--mantine-color-white)' }
    : { ...TAG, background: `var(--mantine-color-${c}-light)`, color: `var(--mantine-color-${c}-light-color)` };
};
const TAG_STYLES = Object.fromEntries(RUN_STATUSES.map((s) => [s, tagStyle(s)])) as Record<RunStatus, CSSProperties>;

/** The status as StatusChip draws it at size xs, in one span with one style object per status (made
 *  once): no component of Mantine's to run for each row of a scrolling table. */
export function StatusTag({ status }: { status: RunStatus }) {
  const style = TAG_STYLES[status];
  return (
    <span style={style} data-status={status}>
      {status}
    </span>
  );
}
