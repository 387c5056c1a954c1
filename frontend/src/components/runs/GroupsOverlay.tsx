// One metric of several run groups (the compare page's "Group seeds"): every member's series, up to
// GROUP_MAX_RUNS runs, through the batch read (hooks/metrics.ts useGroupMemberSeries: one request per 200
// runs; each series the per-run read's answer, so the members' points are those the ungrouped overlay
// draws), aligned on steps per group (lib/groupSeries.ts alignGroup) and drawn by the pure GroupChart in
// the view's chart mode. Past the cap the caption says which runs the groups average.
import { Alert, Loader, Text } from '@mantine/core';
import { memo, useMemo } from 'react';
import { GROUP_MAX_RUNS, useGroupMemberSeries, type OverlayRun } from '../../hooks/metrics';
import { alignGroup } from '../../lib/groupSeries';
import type { ChartMode } from '../../lib/viewState';
import { GroupChart, type ChartGroup } from '../charts/GroupChart';

export interface OverlayGroup {
  name: string;
  runs: readonly OverlayRun[];
}

function GroupsOverlayImpl({ groups, metricKey, mode }: { groups: readonly OverlayGroup[]; metricKey: string; mode: ChartMode }) {
  const runs = useMemo(() => groups.flatMap((g) => g.runs), [groups]);
  const { isPending, error, series, shown } = useGroupMemberSeries(runs, metricKey);
  const chartGroups: ChartGroup[] = useMemo(() => {
    const byRun = new Map(series.map((s) => [s.runId, s.points]));
    return groups
      .map((g) => {
        const members = g.runs.filter((r) => byRun.has(r.id)).map((r) => ({ runId: r.id, points: byRun.get(r.id)! }));
        return { name: g.name, members, points: alignGroup(members.map((m) => m.points)) };
      })
      .filter((g) => g.members.length > 0);
  }, [groups, series]);
  if (error) return <Alert color="red" data-testid="group-chart-error">The members' {metricKey} could not be read: {error.message}</Alert>;
  if (isPending) return <Loader size="sm" />;
  return (
    <>
      {runs.length > shown && (
        <Text size="xs" c="dimmed" data-testid="group-chart-cap">
          The chart reads at most {GROUP_MAX_RUNS} runs: its groups average their members among the first {shown} of these{' '}
          {runs.length} runs ({runs.length - shown} left out; the table's statistics count every member).
        </Text>
      )}
      <GroupChart metricKey={metricKey} groups={chartGroups} mode={mode} />
      <Text size="xs" c="dimmed" data-testid="group-chart-caption">
        Band: {mode === 'envelope' ? 'min/max of the members' : mode === 'mean_ci' ? '95% Student-t interval of the mean' : 'none (every member drawn)'}.
        Steps: the union of the members'; a member counts at a step with its value there, or its last value when
        logged less than its own usual interval earlier; a step is drawn where at least two members count (n per
        step in the tooltip). A group of one is its own line.
      </Text>
    </>
  );
}

export const GroupsOverlay = memo(GroupsOverlayImpl);
