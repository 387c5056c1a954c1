import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useCallback, useMemo, useRef } from 'react';
import { useSearchParams } from 'react-router';
import { api, unwrap } from '../api/client';
import type { SavedView } from '../api/types';
import type { ChartOptions } from '../lib/metricPanels';
import { chartOptionsOf, decodeViewState, roundSmoothing, withChartOptions, writeViewState, type ViewPage, type ViewState } from '../lib/viewState';

// A project's saved views: any role lists and opens them, members save them, the author or a
// project admin renames or deletes one (`can_edit` in the answer says so). The state a page shows lives
// in its URL (lib/viewState.ts); useUrlViewState reads and writes it there.

const viewsKey = (projectId: number) => ['projects', projectId, 'views'] as const;

export const viewsQuery = (projectId: number) => ({
  queryKey: viewsKey(projectId),
  queryFn: () => unwrap(api.GET('/api/v1/projects/{project_id}/views', { params: { path: { project_id: projectId } } })),
});

export function useSavedViews(projectId: number | undefined) {
  return useQuery({ ...viewsQuery(projectId ?? 0), enabled: projectId !== undefined });
}

/** A saved view by its id alone, in whichever of the caller's projects holds it (404 for a view of a project
 *  the caller is not in, as for a missing one); its `project_id` says which. */
export function fetchSavedView(viewId: number): Promise<SavedView> {
  return unwrap(api.GET('/api/v1/views/{view_id}', { params: { path: { view_id: viewId } } }));
}

export interface ViewDraft {
  name: string;
  page: ViewPage;
  state: ViewState;
}

/** Saves a view (members); its 422 (the name) and 409 (a name taken) are the form's to show. */
export function useSaveView(projectId: number) {
  const qc = useQueryClient();
  return useMutation({
    meta: { errorsInline: true },
    mutationFn: (draft: ViewDraft) =>
      unwrap(api.POST('/api/v1/projects/{project_id}/views', { params: { path: { project_id: projectId } }, body: draft })),
    onSuccess: () => void qc.invalidateQueries({ queryKey: viewsKey(projectId) }),
  });
}

/** Renames a view (its author or a project admin). */
export function useRenameView(projectId: number) {
  const qc = useQueryClient();
  return useMutation({
    meta: { errorsInline: true },
    mutationFn: ({ id, name }: { id: number; name: string }) =>
      unwrap(api.PATCH('/api/v1/projects/{project_id}/views/{view_id}', { params: { path: { project_id: projectId, view_id: id } }, body: { name } })),
    onSuccess: () => void qc.invalidateQueries({ queryKey: viewsKey(projectId) }),
  });
}

/** Deletes a view (its author or a project admin). */
export function useDeleteView(projectId: number) {
  const qc = useQueryClient();
  return useMutation({
    meta: { errorsInline: true },
    mutationFn: (id: number) =>
      unwrap(api.DELETE('/api/v1/projects/{project_id}/views/{view_id}', { params: { path: { project_id: projectId, view_id: id } } })),
    onSuccess: (_none, id) => {
      qc.setQueryData<SavedView[]>(viewsKey(projectId), (old) => old?.filter((v) => v.id !== id));
      void qc.invalidateQueries({ queryKey: viewsKey(projectId) });
    },
  });
}

/**
 * The view state in the page's URL and a setter that writes a new one there (replacing the history entry:
 * typing in a search box is not a trail of back-button steps). Other params of the page are kept.
 */
export function useUrlViewState(): [ViewState, (next: ViewState) => void] {
  const [params, setParams] = useSearchParams();
  const state = useMemo(() => decodeViewState(params), [params]);
  const set = useCallback(
    (next: ViewState) => setParams((current) => writeViewState(current, next), { replace: true }),
    [setParams],
  );
  return [state, set];
}

/** How a page reads and changes each metric's chart options (useUrlChartOptions). */
export interface UrlChartOptions {
  /** `metric`'s options: the same object while they do not change, so memoised charts do not redraw */
  optionsOf: (metric: string) => ChartOptions;
  /** writes `metric`'s options into the URL's `charts` (replacing the history entry, as the view state does) */
  setOptions: (metric: string, options: ChartOptions) => void;
}

/**
 * Every chart's options (log scale, smoothing, x axis) in the page's URL, `charts` of the URL contract
 * (lib/viewState.ts): a reload or a link draws the charts as they were, and a saved view of the page keeps
 * them. One entry per metric: the charts of one metric draw alike wherever the page shows them.
 */
export function useUrlChartOptions(): UrlChartOptions {
  const [params, setParams] = useSearchParams();
  const raw = params.get('charts') ?? '';
  const charts = useMemo(() => decodeViewState(new URLSearchParams(raw ? { charts: raw } : {})).charts, [raw]);
  // the last answer per metric, kept while its options read the same
  const cache = useRef(new Map<string, ChartOptions>());
  const optionsOf = useCallback(
    (metric: string) => {
      const c = chartOptionsOf(charts, metric);
      const before = cache.current.get(metric);
      if (before && before.logScale === c.log_scale && before.smoothing === c.smoothing && before.xAxis === c.x_axis) return before;
      const next: ChartOptions = { logScale: c.log_scale, smoothing: c.smoothing, xAxis: c.x_axis };
      cache.current.set(metric, next);
      return next;
    },
    [charts],
  );
  const setOptions = useCallback(
    (metric: string, o: ChartOptions) =>
      setParams(
        (current) => {
          const state = decodeViewState(current);
          const entry = { metric, log_scale: o.logScale, smoothing: roundSmoothing(o.smoothing), x_axis: o.xAxis };
          return writeViewState(current, { ...state, charts: withChartOptions(state.charts, entry) });
        },
        // rendered in the same task (not a transition): a switch shows its new state in the click that set it
        { replace: true, flushSync: true },
      ),
    [setParams],
  );
  return useMemo(() => ({ optionsOf, setOptions }), [optionsOf, setOptions]);
}
