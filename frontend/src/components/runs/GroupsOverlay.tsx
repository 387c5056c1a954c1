// One metric of several run groups (the compare page's "Group seeds"): the members' series (hooks/metrics.ts,
// the overlay's fetch, so the members' points are those the ungrouped overlay draws) aligned on steps per
// group (lib/groupSeries.ts alignGroup) and drawn by the pure GroupChart in the view's chart mode.
import { Loader, Text } from '@mantine/core';
import { memo, useMemo } from 'react';
import { OVERLAY_MAX_RUNS, useOverlaySeries, type OverlayRun } from '../../hooks/metrics';
import { alignGroup } from '../../lib/groupSeries';
import type { ChartMode } from '../../lib/viewState';
import { GroupChart, type ChartGroup } from '../charts/GroupChart';

export interface OverlayGroup {
  name: string;
  runs: readonly OverlayRun[];
}

function GroupsOverlayImpl({ groups, metricKey, mode }: { groups: readonly OverlayGroup[]; metricKey: string; mode: ChartMode }) {
  const runs = useMemo(() => groups.flatMap((g) => g.runs), [groups]);
  const { isPending, series } = useOverlaySeries(runs, metricKey);
  const chartGroups: ChartGroup[] = useMemo(() => {
    const byRun = new Map(series.map((s) => [s.runId, s.points]));
    return groups
      .map((g) => {
        const members = g.runs.filter((r) => byRun.has(r.id)).map((r) => ({ runId: r.id, points: byRun.get(r.id)! }));
        return { name: g.name, members, points: alignGroup(members.map((m) => m.points)) };
      })
      .filter((g) => g.members.length > 0);
  }, [groups, series]);
  if (isPending) return <Loader size="sm" />;
  return (
    <>
      {runs.length > OVERLAY_MAX_RUNS && (
        <Text size="xs" c="dimmed">Curves of the first {OVERLAY_MAX_RUNS} of {runs.length} runs: groups average the members shown.</Text>
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
