import { type InfiniteData, useInfiniteQuery, useQuery } from '@tanstack/react-query';
import { useRef } from 'react';
import { api, unwrap } from '../api/client';
import type { operations } from '../api/schema';
import type { Experiment, RunPage } from '../api/types';
import { isFinished } from '../lib/runStatus';
import type { RunGroup } from '../lib/runsQuery';

// The project-wide runs table and the experiments list, paged on the server: cursor pages of
// GET /api/v1/runs (runs, or groups with group_by) and GET /api/v1/experiments, fetched as the table
// scrolls. A query the API refuses (422) leaves the last good answer on the page (`useLastGood`).

export const RUNS_PAGE = 100;
export const EXPERIMENTS_PAGE = 50;
/** How often the runs table asks again while a loaded run is queued or running, and a page of groups. */
export const LIVE_RUNS_POLL_MS = 5000;
export const GROUPS_POLL_MS = 15_000;

/**
 * The runs table's polling: every loaded page is asked again while one of its runs is not finished
 * (statuses and latest metrics move), and stops once all are; groups carry no statuses, so a page of
 * groups is asked again at a slower pace while the tab is visible (react-query pauses it in the background).
 */
export function runsRefetchInterval(data: InfiniteData<RunPage, string | null> | undefined): number | false {
  if (!data) return false;
  if (data.pages.some((p) => p.groups != null)) return GROUPS_POLL_MS;
  return data.pages.some((p) => p.items.some((r) => !isFinished(r.status))) ? LIVE_RUNS_POLL_MS : false;
}

export interface RunsRequest {
  project: string;
  q: string | null;
  sort?: string;
  order?: 'asc' | 'desc';
  group_by?: string | null;
  metrics?: string | null;
}


/** GET /runs's query for one page: the view's q, sort and grouping, without the empty ones. */
export function runsQueryParams(req: RunsRequest, cursor: string | null, limit = RUNS_PAGE): RunsQuery {
  const out: RunsQuery = { project: req.project, limit };
  if (req.q) out.q = req.q;
  if (req.sort) out.sort = req.sort;
  if (req.order) out.order = req.order;
  if (req.group_by) out.group_by = req.group_by;
  if (req.group_by && req.metrics) out.metrics = req.metrics;
  if (cursor) out.cursor = cursor;
  return out;
}

type RunsQuery = NonNullable<operations['runs-list']['parameters']['query']>;

function fetchRuns(query: RunsQuery): Promise<RunPage> {
  return unwrap(api.GET('/api/v1/runs', { params: { query } }));
}

/**
 * placeholderData that keeps the previous results while a new query of the SAME project loads (a new
 * filter, sort or grouping keeps its rows on screen), but never across projects: after a switch the page
 * shows its loading state, not the other project's rows under the new project's heading.
 */
function keepWithinProject<T>(project: string) {
  return (previous: T | undefined, previousQuery?: { queryKey: readonly unknown[] }): T | undefined => {
    const key = previousQuery?.queryKey;
    const prevProject = key?.[2] && typeof key[2] === 'object' ? (key[2] as { project?: string }).project : key?.[2];
    return prevProject === project ? previous : undefined;
  };
}

/** The runs (or groups) of a project matching the view, page after page as the table asks for more. */
export function useProjectRuns(req: RunsRequest, enabled = true) {
  return useInfiniteQuery({
    enabled,
    queryKey: ['runs', 'project', req],
    queryFn: ({ pageParam }) => fetchRuns(runsQueryParams(req, pageParam)),
    initialPageParam: null as string | null,
    getNextPageParam: (last) => last.next_cursor,
    placeholderData: keepWithinProject(req.project),
    refetchInterval: (q) => runsRefetchInterval(q.state.data),
    meta: { errorsInline: true },
    retry: false,
  });
}

/**
 * Each loaded run's metric aggregates (min / max / best columns: the run rows carry only the latest
 * values): the page's runs grouped by id, a group of one per run whose mean is the run's value.
 */
export function useRunAggregates(project: string, ids: readonly number[], metrics: string | null) {
  return useQuery({
    queryKey: ['runs', 'project', project, 'aggregates', metrics, ids],
    queryFn: async () => {
      const page = await fetchRuns({ project, q: `id in (${ids.join(', ')})`, group_by: 'id', metrics: metrics!, limit: ids.length });
      const out = new Map<number, RunGroup['metrics']>();
      for (const g of page.groups ?? []) out.set(Number(g.key.id), g.metrics);
      return out;
    },
    enabled: metrics !== null && ids.length > 0,
    placeholderData: keepWithinProject(project),
  });
}

export interface ExperimentsRequest {
  project: string;
  q: string | null;
}

/** The experiments of a project matching `q`, newest first, a page at a time. */
export function useExperimentsPages(req: ExperimentsRequest) {
  return useInfiniteQuery({
    queryKey: ['experiments', 'list', req],
    queryFn: ({ pageParam }) =>
      unwrap(
        api.GET('/api/v1/experiments', {
          params: { query: { project: req.project, limit: EXPERIMENTS_PAGE, order: 'desc', ...(req.q ? { q: req.q } : {}), ...(pageParam ? { cursor: pageParam } : {}) } },
        }),
      ),
    initialPageParam: null as string | null,
    getNextPageParam: (last) => last.next_cursor,
    placeholderData: keepWithinProject(req.project),
    // run counts move while runs run (every loaded page is asked again)
    refetchInterval: 5000,
    meta: { errorsInline: true },
    retry: false,
  });
}

export type ExperimentItem = Experiment;

/** The latest value that was there (a query's last good answer stays while a new one is refused). */
export function useLastGood<T>(value: T | undefined): T | undefined {
  const ref = useRef<T | undefined>(undefined);
  if (value !== undefined) ref.current = value;
  return ref.current;
}
