// One metric of several runs overlaid (the last-value line of each run's buckets), legend labelled by
// the params that differ between them.
import { Loader, Text } from '@mantine/core';
import { useQueries } from '@tanstack/react-query';
import { memo, useMemo } from 'react';
import { api, unwrap } from '../../api/client';
import { bucketsToSeries } from '../../lib/buckets';
import { formatValue } from '../../lib/dotted';
import { runLabel, varyingParams } from '../../lib/labels';
import { EChart } from './EChart';
import type { EChartsOption } from './echarts';

/** Buckets per run when overlaying: several runs share the width, so fewer each. */
export const OVERLAY_MAX_POINTS = 500;
/** More overlaid runs than this are unreadable; the caller is told to narrow the selection. */
export const OVERLAY_MAX_RUNS = 20;

interface RunLike {
  id: number;
  params: Record<string, unknown>;
  status?: string;
}

const UNFINISHED = new Set(['queued', 'running']);

function OverlayChartImpl({ runs, metricKey, height = 320 }: { runs: readonly RunLike[]; metricKey: string; height?: number }) {
  const shown = runs.slice(0, OVERLAY_MAX_RUNS);
  const queries = useQueries({
    queries: shown.map((r) => ({
      // the status is part of the key: a run that just finished is fetched once more, complete
      queryKey: ['runs', r.id, 'metrics', metricKey, null, null, OVERLAY_MAX_POINTS, r.status ?? ''],
      queryFn: () =>
        unwrap(api.GET('/api/v1/runs/{run_id}/metrics', { params: { path: { run_id: r.id }, query: { keys: metricKey, max_points: OVERLAY_MAX_POINTS } } })),
      refetchInterval: UNFINISHED.has(r.status ?? '') ? 3000 : (false as const),
    })),
  });
  const dataKey = queries.map((q) => q.dataUpdatedAt).join(',');
  const option = useMemo<EChartsOption>(() => {
    const keys = varyingParams(shown);
    return {
      animation: false,
      grid: { left: 56, right: 16, top: 40, bottom: 56 },
      legend: { type: 'scroll', top: 0 },
      tooltip: { trigger: 'axis', valueFormatter: (v: unknown) => formatValue(v) },
      xAxis: { type: 'value', name: 'step', nameLocation: 'middle', nameGap: 24, scale: true },
      yAxis: { type: 'value', scale: true, name: metricKey },
      dataZoom: [{ type: 'inside', filterMode: 'none' }, { type: 'slider', height: 18, bottom: 4, filterMode: 'none' }],
      series: shown.map((r, i) => ({
        name: runLabel(r, keys),
        type: 'line',
        symbol: 'none',
        data: bucketsToSeries(queries[i]?.data?.series?.[metricKey]?.buckets ?? []).line,
      })),
    };
  }, [dataKey, metricKey, shown.map((r) => r.id).join(',')]); // eslint-disable-line react-hooks/exhaustive-deps

  if (shown.length === 0) return <Text c="dimmed">Select runs to overlay their curves.</Text>;
  if (queries.every((q) => q.isPending)) return <Loader size="sm" />;
  return (
    <>
      {runs.length > OVERLAY_MAX_RUNS && <Text size="xs" c="dimmed">Showing the first {OVERLAY_MAX_RUNS} of {runs.length} selected runs.</Text>}
      <EChart option={option} height={height} ariaLabel={`${metricKey} of ${shown.length} runs`} testId="overlay-chart" />
    </>
  );
}

export const OverlayChart = memo(OverlayChartImpl);
