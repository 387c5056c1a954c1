import { useDebouncedCallback } from '@mantine/hooks';
import { keepPreviousData, useQueries, useQuery } from '@tanstack/react-query';
import { useEffect, useLayoutEffect, useMemo, useRef, useState } from 'react';
import { api, unwrap } from '../api/client';
import { CHART_MAX_POINTS } from '../early';
import type { Run } from '../api/types';
import { mergeZoomed, rezoom, zoomToStepRange, type Bucket, type Series, type StepRange } from '../lib/buckets';
import { drawnExtent } from '../lib/metricPanels';
import { DEFAULT_OVERLAY_OPTIONS, overlaySeries, type OverlayOptions, type OverlaySeries } from '../lib/overlay';
import { isFinished } from '../lib/runStatus';

/** Buckets per key for a chart the width of a page (src/early.ts starts the run page's first ones). */
export { CHART_MAX_POINTS };
/** Milliseconds a zoom gesture must rest before the finer buckets are fetched. */
export const ZOOM_DEBOUNCE_MS = 200;
/**
 * A live chart refetches when the event stream reports a step past what it draws, at most every
 * LIVE_REFRESH_MS (a downsampled query over a long series is not free, and the stream reports twice a
 * second).
 */
export const LIVE_REFRESH_MS = 1000;
/** Buckets per run when overlaying: several runs share the width, so fewer each. */
export const OVERLAY_MAX_POINTS = 500;
/** More overlaid runs than this are unreadable; the caller is told to narrow the selection. */
export const OVERLAY_MAX_RUNS = 20;
/**
 * The runs a seed-group chart reads (components/runs/GroupsOverlay.tsx): every member of every group up to
 * this many, so a group's mean is over all its seeds, not the ungrouped overlay's first 20 curves. Two
 * batch reads of METRICS_BATCH_MAX_IDS; past it the chart's caption names the cap.
 */
export const GROUP_MAX_RUNS = 400;
/** Run ids one batch read names at most (`GET /api/v1/runs/metrics`, the API's cap). */
export const METRICS_BATCH_MAX_IDS = 200;

/** A run's metric keys (also prefetched by the run page's route, src/router.tsx). */
export const metricKeysQuery = (runId: number) => ({
  queryKey: ['runs', runId, 'metric-keys'] as const,
  queryFn: () => unwrap(api.GET('/api/v1/runs/{run_id}/metric-keys', { params: { path: { run_id: runId } } })),
});

export function useMetricKeys(runId: number, live: boolean) {
  return useQuery({ ...metricKeysQuery(runId), refetchInterval: live ? 3000 : false });
}

/**
 * The query of some keys' downsampled series of a run, over the whole run or a zoomed step range: shared
 * by useMetrics and the run page's route loader (src/router.tsx), which starts each chart's first request
 * as soon as the run's keys are known instead of after the page has rendered.
 */
export const metricsQuery = (
  runId: number,
  keys: readonly string[],
  range: StepRange | null = null,
  version = 0,
  maxPoints = CHART_MAX_POINTS,
  withTime = false,
) => ({
  queryKey: ['runs', runId, 'metrics', [...keys].sort().join(','), range?.min ?? null, range?.max ?? null, maxPoints, version, withTime] as const,
  queryFn: () =>
    unwrap(
      api.GET('/api/v1/runs/{run_id}/metrics', {
        params: {
          path: { run_id: runId },
          query: {
            keys: keys.join(','),
            max_points: maxPoints,
            ...(range ? { step_min: range.min, step_max: range.max } : {}),
            // each bucket's time, for a chart over wall-clock or relative time
            ...(withTime ? { with_time: true } : {}),
          },
        },
      }),
    ),
  staleTime: range ? 60_000 : 5_000,
});

/**
 * Downsampled series of some keys of a run, over the whole run or a zoomed step range. `version` (the
 * latest step the event stream reported) makes a live run's chart refetch as points arrive.
 */
export function useMetrics(...args: Parameters<typeof metricsQuery>) {
  const keys = args[1];
  return useQuery({
    ...metricsQuery(...args),
    enabled: keys.length > 0,
    placeholderData: keepPreviousData,
  });
}

/** The zoom window, in percent of the full step range (ECharts' dataZoom start/end). */
export interface Zoom {
  start: number;
  end: number;
}

/** What a metric chart draws: shaped data only. */
export interface MetricView {
  /** the whole run's series (point count, step range) */
  series: Series;
  /** the overview's buckets with the zoomed range's finer buckets spliced in */
  buckets: Bucket[];
  full: StepRange | null;
  zoom: Zoom;
  /** the zoomed step range asked at finer resolution, or null at full view */
  range: StepRange | null;
  refined: boolean;
  refining: boolean;
}

/** An x axis' extent, in its units, named by the axis ('step' or wall-clock 'time'). */
interface XExtent {
  axis: string;
  min: number;
  max: number;
}

/**
 * One metric of one run, zoomable: the overview, refetched as the event stream reports newer steps
 * (`latestStep`), plus finer buckets of the zoomed steps once a zoom gesture rests ZOOM_DEBOUNCE_MS.
 * `view` is null when the run has no point of the key yet.
 */
export function useZoomableMetric(
  runId: number,
  metricKey: string,
  latestStep = -1,
  {
    withTime = false,
    toRange,
  }: {
    /** fetch each bucket's time (a chart over time) */
    withTime?: boolean;
    /** the step range a zoom selects of the overview's buckets when the x axis is not the step (default:
     *  linear in steps) */
    toRange?: (zoom: Zoom, overview: readonly Bucket[]) => StepRange | null;
  } = {},
) {
  const [zoom, setZoom] = useState<Zoom>({ start: 0, end: 100 });
  const [range, setRange] = useState<StepRange | null>(null);
  const [version, setVersion] = useState(0);
  const toRangeRef = useRef(toRange);
  toRangeRef.current = toRange;
  const overview = useMetrics(runId, [metricKey], null, version, CHART_MAX_POINTS, withTime);
  const drawnMax = overview.data?.series[metricKey]?.step_max ?? -1;
  const behind = !overview.isPending && !overview.isFetching && latestStep > drawnMax;
  const latestRef = useRef(latestStep);
  latestRef.current = latestStep;
  useEffect(() => {
    // a throttle, not a debounce: the stream keeps reporting, the timer must not restart on each report
    if (!behind) return;
    const t = setTimeout(() => setVersion(latestRef.current), LIVE_REFRESH_MS);
    return () => clearTimeout(t);
  }, [behind]);
  const fine = useMetrics(runId, range ? [metricKey] : [], range, 0, CHART_MAX_POINTS, withTime);
  const series = overview.data?.series[metricKey];
  const fullMin = series?.step_min ?? null;
  const fullMax = series?.step_max ?? null;
  const full = useMemo(() => (fullMin !== null && fullMax !== null ? { min: fullMin, max: fullMax } : null), [fullMin, fullMax]);
  // a live run grows under a zoom: the window stays on the steps (or times) chosen. A zoom is in percent of
  // the x extent: the run's step range over a step axis, over time (toRange) the overview's first and last
  // bucket time, in wall-clock time whatever the axis shows (relative time only shifts it, and its origin
  // moves for a run without a start); a change of axis starts over (the chart is remounted then: MetricPanels
  // keys it by its axis)
  const overTime = useMemo(() => {
    const e = toRange && series ? drawnExtent(series.buckets, 'time', null) : null;
    return e && { axis: 'time', min: e[0], max: e[1] };
  }, [toRange, series]);
  const over = toRange ? overTime : full && { axis: 'step', ...full };
  const overAxis = over?.axis ?? null;
  const overMin = over?.min ?? null;
  const overMax = over?.max ?? null;
  // before the paint: the new points are never drawn under the zoom of before. An extent missing for a
  // moment keeps the one before
  const zoomedOver = useRef<XExtent | null>(null);
  useLayoutEffect(() => {
    if (overAxis === null || overMin === null || overMax === null) return;
    const prev = zoomedOver.current;
    const next = { axis: overAxis, min: overMin, max: overMax };
    zoomedOver.current = next;
    if (prev && prev.axis === next.axis && (prev.min !== next.min || prev.max !== next.max)) setZoom((z) => rezoom(z, prev, next));
  }, [overAxis, overMin, overMax]);
  const zoomed = range ? fine.data?.series[metricKey]?.buckets : undefined;
  const buckets = useMemo(() => {
    const base = series?.buckets ?? [];
    return range && zoomed ? mergeZoomed(base, zoomed, range) : base;
  }, [series, zoomed, range]);

  const requestRange = useDebouncedCallback(
    (z: Zoom) => setRange(toRangeRef.current ? toRangeRef.current(z, series?.buckets ?? []) : full ? zoomToStepRange(full, z.start, z.end) : null),
    ZOOM_DEBOUNCE_MS,
  );
  const onZoom = useMemo(
    () => (z: Zoom) => {
      setZoom(z);
      requestRange(z);
    },
    [requestRange],
  );

  const refined = !!(range && fine.data && !fine.isFetching);
  const view = useMemo<MetricView | null>(
    () => (series && series.total_points > 0 ? { series, buckets, full, zoom, range, refined, refining: fine.isFetching } : null),
    [series, buckets, full, zoom, range, refined, fine.isFetching],
  );
  return { isPending: overview.isPending, error: overview.error, view, onZoom };
}

export type OverlayRun = Pick<Run, 'id' | 'params' | 'status'> & { name?: string | null };

/**
 * One metric of the first OVERLAY_MAX_RUNS runs, shaped for overlaid curves (lib/overlay.ts); an
 * unfinished run's series is refetched every 3 s, a run that just finished once more (its status is
 * part of the query key).
 */
export function useOverlaySeries(
  runs: readonly OverlayRun[],
  metricKey: string,
  options: OverlayOptions = DEFAULT_OVERLAY_OPTIONS,
): { isPending: boolean; series: OverlaySeries[] } {
  const shown = runs.slice(0, OVERLAY_MAX_RUNS);
  const queries = useQueries({
    queries: shown.map((r) => ({
      queryKey: ['runs', r.id, 'metrics', metricKey, null, null, OVERLAY_MAX_POINTS, r.status],
      queryFn: () =>
        unwrap(api.GET('/api/v1/runs/{run_id}/metrics', { params: { path: { run_id: r.id }, query: { keys: metricKey, max_points: OVERLAY_MAX_POINTS } } })),
      refetchInterval: isFinished(r.status) ? (false as const) : 3000,
    })),
  });
  const dataKey = queries.map((q) => q.dataUpdatedAt).join(',');
  const runsKey = shown.map((r) => `${r.id}:${r.name ?? ''}`).join(','); // a rename relabels the legend
  const series = useMemo(
    () => overlaySeries(shown, queries.map((q) => q.data), metricKey, options),
    [dataKey, runsKey, metricKey, options], // eslint-disable-line react-hooks/exhaustive-deps
  );
  return { isPending: shown.length > 0 && queries.every((q) => q.isPending), series };
}

/** `runs` in consecutive chunks of at most `size`, each one batch read. */
export function chunkRuns<R>(runs: readonly R[], size = METRICS_BATCH_MAX_IDS): R[][] {
  const out: R[][] = [];
  for (let i = 0; i < runs.length; i += size) out.push(runs.slice(i, i + size));
  return out;
}

/** A chunk is asked again every 3 s while one of its runs is unfinished (as useOverlaySeries does). */
export const chunkRefetchInterval = (chunk: readonly Pick<Run, 'status'>[]): number | false =>
  chunk.every((r) => isFinished(r.status)) ? false : 3000;

/**
 * One metric of the first GROUP_MAX_RUNS runs through the batch read (`GET /api/v1/runs/metrics`, one
 * request per METRICS_BATCH_MAX_IDS runs), each run's series the same answer the per-run read gives
 * useOverlaySeries, shaped alike (lib/overlay.ts); pending until every chunk answered. A chunk holding an unfinished run is refetched every
 * 3 s; a run's status is part of its chunk's query key, so a run that just finished is read once more.
 */
export function useGroupMemberSeries(
  runs: readonly OverlayRun[],
  metricKey: string,
): { isPending: boolean; error: Error | null; series: OverlaySeries[]; shown: number } {
  const shown = runs.slice(0, GROUP_MAX_RUNS);
  const chunks = chunkRuns(shown);
  const queries = useQueries({
    queries: chunks.map((chunk) => ({
      queryKey: ['runs', 'metrics-batch', metricKey, OVERLAY_MAX_POINTS, chunk.map((r) => `${r.id}:${r.status}`).join(',')],
      queryFn: () =>
        unwrap(
          api.GET('/api/v1/runs/metrics', {
            params: { query: { ids: chunk.map((r) => r.id).join(','), key: metricKey, max_points: OVERLAY_MAX_POINTS } },
          }),
        ),
      refetchInterval: chunkRefetchInterval(chunk),
    })),
  });
  const dataKey = queries.map((q) => q.dataUpdatedAt).join(',');
  const runsKey = shown.map((r) => `${r.id}:${r.name ?? ''}`).join(',');
  const series = useMemo(() => {
    const byRun = new Map(queries.flatMap((q) => q.data ?? []).map((item) => [item.run_id, item]));
    return overlaySeries(shown, shown.map((r) => byRun.get(r.id)), metricKey);
  }, [dataKey, runsKey, metricKey]); // eslint-disable-line react-hooks/exhaustive-deps
  // a group's mean over some of its members is wrong, not partial: nothing is drawn until every chunk answered
  return {
    isPending: queries.some((q) => q.isPending),
    error: queries.find((q) => q.error)?.error ?? null,
    series,
    shown: shown.length,
  };
}
