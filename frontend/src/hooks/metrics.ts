import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { api, unwrap } from '../api/client';
import type { StepRange } from '../lib/buckets';

/** Buckets per key for a chart the width of a page: more would be sub-pixel. */
export const CHART_MAX_POINTS = 1000;

export function useMetricKeys(runId: number, live: boolean) {
  return useQuery({
    queryKey: ['runs', runId, 'metric-keys'],
    queryFn: () => unwrap(api.GET('/api/v1/runs/{run_id}/metric-keys', { params: { path: { run_id: runId } } })),
    refetchInterval: live ? 3000 : false,
  });
}

/**
 * Downsampled series of some keys of a run, over the whole run or a zoomed step range. `version` (the
 * latest step the event stream reported) makes a live run's chart refetch as points arrive.
 */
export function useMetrics(runId: number, keys: readonly string[], range: StepRange | null = null, version = 0, maxPoints = CHART_MAX_POINTS) {
  return useQuery({
    queryKey: ['runs', runId, 'metrics', [...keys].sort().join(','), range?.min ?? null, range?.max ?? null, maxPoints, version],
    queryFn: () =>
      unwrap(
        api.GET('/api/v1/runs/{run_id}/metrics', {
          params: {
            path: { run_id: runId },
            query: { keys: keys.join(','), max_points: maxPoints, ...(range ? { step_min: range.min, step_max: range.max } : {}) },
          },
        }),
      ),
    enabled: keys.length > 0,
    placeholderData: keepPreviousData,
    staleTime: range ? 60_000 : 5_000,
  });
}
