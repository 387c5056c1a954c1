import { replaceEqualDeep, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { api, unwrap } from '../api/client';
import type { ExperimentCreate, ResultKind } from '../api/types';
import { carryColumns, rowsOfTable, type RunRow } from '../lib/runsTable';
import { isFinished } from '../lib/runStatus';

/** How often a page with unfinished runs polls for their status: every 1.5 s, slower for big sweeps
 *  (the answer carries every run; 2,000 runs poll every 4 s). */
export const LIVE_POLL_MS = 1500;
export const livePollMs = (runs: number) => Math.max(LIVE_POLL_MS, Math.min(10_000, 2 * runs));

const fetchExperiment = (id: number) =>
  unwrap(api.GET('/api/v1/experiments/{experiment_id}', { params: { path: { experiment_id: id }, query: { with_runs: false } } }));

/** An experiment's own fields (also prefetched by the experiment page's route, src/router.tsx). */
export const experimentQuery = (id: number) => ({ queryKey: ['experiments', id] as const, queryFn: () => fetchExperiment(id) });

/** An experiment's runs as columns (also prefetched by the experiment page's route). */
export const runsTableQuery = (id: number) => ({
  queryKey: ['experiments', id, 'runs-table'] as const,
  queryFn: () => unwrap(api.GET('/api/v1/experiments/{experiment_id}/runs-table', { params: { path: { experiment_id: id } } })),
});

/** An experiment's own fields (name, spec, sweep, counts, review), without its runs: useRunsTable has those. */
export function useExperiment(id: number) {
  return useQuery(experimentQuery(id));
}

/** The query's structural sharing of the runs table and its rows: a poll's rows are merged into the previous
 *  ones (unchanged runs keep their objects, so their rows do not render again), which makes a new array;
 *  it keeps the columns rowsOfTable read off the table. */
export function shareRows(prev: unknown, next: unknown): unknown {
  const out = replaceEqualDeep(prev, next);
  if (Array.isArray(next) && Array.isArray(out)) carryColumns(next as RunRow[], out as RunRow[]);
  return out;
}

/**
 * An experiment's runs as table rows, from the columnar runs table (no specs: 10,000 runs are ~1 MB, not
 * ~7 MB, in one request); polls while any run is queued or running, so statuses move live.
 */
export function useRunsTable(id: number) {
  return useQuery({
    ...runsTableQuery(id),
    select: rowsOfTable,
    structuralSharing: shareRows,
    refetchInterval: (q) => (q.state.data?.status.some((s) => !isFinished(s)) ? livePollMs(q.state.data.id.length) : false),
  });
}

/** How many running runs the ETAs of an experiment's runs table are asked for, at most (one page). */
export const ETA_RUNS = 1000;

/**
 * Each running run's ETA (`progress.eta_at`), by run id: the columnar runs table leaves progress out, so
 * while the table shows running runs this asks for them (a few: one per busy worker) as often as the
 * table polls.
 */
export function useRunningEtas(experimentId: number, running: number) {
  return useQuery({
    queryKey: ['experiments', experimentId, 'running-etas'],
    queryFn: async () => {
      const page = await unwrap(
        api.GET('/api/v1/runs', { params: { query: { experiment_id: experimentId, status: ['running'], limit: ETA_RUNS } } }),
      );
      return new Map(page.items.map((r): [number, string | null] => [r.id, r.progress.eta_at ?? null]));
    },
    enabled: running > 0,
    refetchInterval: running > 0 ? livePollMs(running) : false,
  });
}

/** An experiment's name for a page that shows one of its runs: the cached detail, fetched once (no polling). */
export function useExperimentName(id: number): { name: string; runs: number } | undefined {
  const q = useQuery({ ...experimentQuery(id), staleTime: 60_000 });
  return q.data ? { name: q.data.name, runs: q.data.run_count } : undefined;
}

/**
 * An experiment's results of one result kind (a kind's experiment tab asks for its own). Refreshed while
 * runs are unfinished, since results arrive as cells finish.
 */
export function useExperimentResults(id: number, kind: ResultKind, live: boolean) {
  return useQuery({
    queryKey: ['experiments', id, 'results', kind],
    queryFn: () => unwrap(api.GET('/api/v1/experiments/{experiment_id}/results', { params: { path: { experiment_id: id }, query: { kind } } })),
    refetchInterval: live ? 5000 : false,
  });
}

export function usePreview() {
  return useMutation({
    meta: { formErrors: true },
    mutationFn: (body: ExperimentCreate) => unwrap(api.POST('/api/v1/experiments/preview', { body })),
  });
}

export function useCreateExperiment() {
  const qc = useQueryClient();
  return useMutation({
    meta: { formErrors: true },
    mutationFn: (body: ExperimentCreate) => unwrap(api.POST('/api/v1/experiments', { body })),
    onSuccess: (detail) => {
      qc.setQueryData(['experiments', detail.id], detail);
      void qc.invalidateQueries({ queryKey: ['experiments', 'list'] });
    },
  });
}

export function useStar(experimentId: number) {
  const qc = useQueryClient();
  return useMutation({
    mutationFn: (starred: boolean) => {
      const params = { params: { path: { experiment_id: experimentId } } };
      return unwrap(starred ? api.PUT('/api/v1/experiments/{experiment_id}/star', params) : api.DELETE('/api/v1/experiments/{experiment_id}/star', params));
    },
    onSettled: () => qc.invalidateQueries({ queryKey: ['experiments'] }),
  });
}
