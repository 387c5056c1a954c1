// One metric of several run groups (the compare page's "Group seeds"): every member's series, up to
// GROUP_MAX_RUNS runs, through the batch read (hooks/metrics.ts useGroupMemberSeries: one request per 200
// runs; each series the per-run read's answer, so the members' points are those the ungrouped overlay
// draws), aligned on steps per group (lib/groupSeries.ts alignGroup) and drawn by the pure GroupChart in
// the view's chart mode. Past the cap the caption says which runs the groups average.
// Its options (log scale, smoothing) are the metric's in the page's URL (`charts`, hooks/views.ts
// useUrlChartOptions), as for the ungrouped overlay: smoothing smooths each member's curve (the run page's
// EMA) before the group's statistics, and the group's raw mean stays faint beneath.
import { Alert, Group, Loader, Text } from '@mantine/core';
import { memo, useMemo, useState } from 'react';
import { GROUP_MAX_RUNS, useGroupMemberSeries, type OverlayRun } from '../../hooks/metrics';
import { useUrlChartOptions } from '../../hooks/views';
import { alignGroup, type MemberSeries } from '../../lib/groupSeries';
import { emaSmooth } from '../../lib/metricPanels';
import type { OverlayOptions } from '../../lib/overlay';
import type { ChartMode } from '../../lib/viewState';
import { GroupChart, type ChartGroup } from '../charts/GroupChart';
import { ChartOptionsBar, ChartOptionsButton } from './ChartOptionsMenu';

/** A member's curve smoothed by the EMA of weight `w` over its values in step order (w = 0: itself). */
export function smoothMember(points: MemberSeries, w: number): MemberSeries {
  if (w <= 0) return points;
  const sorted = [...points].sort((a, b) => a[0] - b[0]);
  const smoothed = emaSmooth(sorted.map(([, v]) => v), w);
  return sorted.flatMap(([step], i) => (smoothed[i] === null ? [] : [[step, smoothed[i]!] as const]));
}

export interface OverlayGroup {
  name: string;
  runs: readonly OverlayRun[];
}

function GroupsOverlayImpl({ groups, metricKey, mode }: { groups: readonly OverlayGroup[]; metricKey: string; mode: ChartMode }) {
  const runs = useMemo(() => groups.flatMap((g) => g.runs), [groups]);
  const { isPending, error, series, shown } = useGroupMemberSeries(runs, metricKey);
  const { optionsOf, setOptions } = useUrlChartOptions();
  const [showOptions, setShowOptions] = useState(false);
  const barOptions = optionsOf(metricKey);
  const options: OverlayOptions = useMemo(() => ({ logScale: barOptions.logScale, smoothing: barOptions.smoothing }), [barOptions]);
  const chartGroups: ChartGroup[] = useMemo(() => {
    const byRun = new Map(series.map((s) => [s.runId, s.points]));
    const w = options.smoothing;
    return groups
      .map((g) => {
        const raw = g.runs.filter((r) => byRun.has(r.id)).map((r) => ({ runId: r.id, points: byRun.get(r.id)! }));
        const members = w > 0 ? raw.map((m) => ({ runId: m.runId, points: smoothMember(m.points, w) })) : raw;
        return {
          name: g.name,
          members,
          points: alignGroup(members.map((m) => m.points)),
          ...(w > 0 ? { rawPoints: alignGroup(raw.map((m) => m.points)) } : {}),
          values: raw.flatMap((m) => m.points.map(([, v]) => v)),
        };
      })
      .filter((g) => g.members.length > 0);
  }, [groups, series, options.smoothing]);
  if (error) return <Alert color="red" data-testid="group-chart-error">The members' {metricKey} could not be read: {error.message}</Alert>;
  if (isPending) return <Loader size="sm" />;
  return (
    <>
      <Group justify="space-between" gap="xs" wrap="nowrap" align="flex-start">
        {showOptions ? <ChartOptionsBar metricKey={metricKey} options={barOptions} xAxis={false} onChange={(o) => setOptions(metricKey, o)} /> : <span />}
        <ChartOptionsButton metricKey={metricKey} open={showOptions} changed={barOptions.logScale || barOptions.smoothing > 0} onToggle={() => setShowOptions((o) => !o)} />
      </Group>
      {runs.length > shown && (
        <Text size="xs" c="dimmed" data-testid="group-chart-cap">
          The chart reads at most {GROUP_MAX_RUNS} runs: its groups average their members among the first {shown} of these{' '}
          {runs.length} runs ({runs.length - shown} left out; the table's statistics count every member).
        </Text>
      )}
      <GroupChart metricKey={metricKey} groups={chartGroups} mode={mode} options={options} />
      <Text size="xs" c="dimmed" data-testid="group-chart-caption">
        Band: {mode === 'envelope' ? 'min/max of the members' : mode === 'mean_ci' ? '95% Student-t interval of the mean' : 'none (every member drawn)'}.
        Steps: the union of the members'; a member counts at a step with its value there, or its last value when
        logged less than its own usual interval earlier; a step is drawn where at least two members count (n per
        step in the tooltip). A group of one is its own line.
        {options.smoothing > 0 && ` Smoothed: each member's curve (EMA ${options.smoothing.toFixed(2)}) before its group's statistics; the raw mean faint beneath.`}
      </Text>
    </>
  );
}

export const GroupsOverlay = memo(GroupsOverlayImpl);
