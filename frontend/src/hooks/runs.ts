import { keepPreviousData, useMutation, useQueries, useQuery, useQueryClient } from '@tanstack/react-query';
import { useEffect, useRef, useState } from 'react';
import { api, runEventsUrl, unwrap } from '../api/client';
import type { ExperimentDetail, Run, RunsTableColumns } from '../api/types';
import { applyRunEvent, decodeRunEvent, NOT_LIVE, RUN_EVENT_NAMES, type LiveState } from '../lib/runEvents';
import { patchTable } from '../lib/runsTable';
import { isFinished } from '../lib/runStatus';

export type { LiveState };

/** A run (also prefetched by the run page's route, src/router.tsx). */
export const runQuery = (id: number) => ({
  queryKey: ['runs', id] as const,
  queryFn: () => unwrap(api.GET('/api/v1/runs/{run_id}', { params: { path: { run_id: id } } })),
});

export function useRun(id: number) {
  return useQuery(runQuery(id));
}

/**
 * A run's attempts (`GET /runs/{id}/attempts`), fetched again whenever the run's attempt or status or
 * holder changes (the event stream's `status` events replace the cached run), so a requeue, a lost
 * worker or a finish shows up in the history at once.
 */
export function useRunAttempts(run: Run) {
  return useQuery({
    queryKey: ['runs', run.id, 'attempts', run.attempt, run.status, run.held] as const,
    queryFn: () => unwrap(api.GET('/api/v1/runs/{run_id}/attempts', { params: { path: { run_id: run.id } } })),
    placeholderData: keepPreviousData,
  });
}

/**
 * Where an external run came from (`GET /runs/{id}/provenance`: command line, git commit, dirty flag and
 * diff, Python, packages, host; null for a worker's run), asked by its tab when first opened. A resumed
 * run's provenance is its latest attempt's: asked again when the attempt changes.
 */
export function useRunProvenance(run: Run) {
  return useQuery({
    queryKey: ['runs', run.id, 'provenance', run.attempt] as const,
    queryFn: () => unwrap(api.GET('/api/v1/runs/{run_id}/provenance', { params: { path: { run_id: run.id } } })),
  });
}

export function useRunsById(ids: readonly number[]) {
  return useQueries({ queries: ids.map((id) => runQuery(id)) });
}

/** Puts a fresh run into every cache entry that holds it (its own and its experiment's). */
function storeRun(qc: ReturnType<typeof useQueryClient>, run: Run) {
  qc.setQueryData(['runs', run.id], run);
  qc.setQueryData<ExperimentDetail>(['experiments', run.experiment_id], (old) =>
    old ? { ...old, runs: old.runs.map((r) => (r.id === run.id ? run : r)) } : old,
  );
  qc.setQueryData<RunsTableColumns>(['experiments', run.experiment_id, 'runs-table'], (old) => (old ? patchTable(old, run) : old));
}

export function useRunAction(action: 'cancel' | 'retry') {
  const qc = useQueryClient();
  return useMutation({
    mutationFn: async (ids: readonly number[]) => {
      const path = action === 'cancel' ? '/api/v1/runs/{run_id}/cancel' : '/api/v1/runs/{run_id}/retry';
      // one request per run; a bulk action on thousands runs a few at a time
      const results: Run[] = [];
      const queue = [...ids];
      const worker = async () => {
        for (let id = queue.shift(); id !== undefined; id = queue.shift())
          results.push(await unwrap(api.POST(path, { params: { path: { run_id: id } } })));
      };
      await Promise.all(Array.from({ length: Math.min(6, ids.length) }, worker));
      return results;
    },
    onSuccess: (runs) => runs.forEach((r) => storeRun(qc, r)),
    onSettled: () => qc.invalidateQueries({ queryKey: ['experiments'] }),
  });
}

/**
 * Names a run (PATCH /runs/{id}; a blank name clears it). The answer replaces the run in every cache that
 * holds it (the runs table's name column too); the project's activity feed is fetched again ("renamed").
 * A refused name (422: too long, a control character) is shown by the form, not as a notification.
 */
export function useRenameRun(runId: number) {
  const qc = useQueryClient();
  return useMutation({
    mutationFn: (name: string) => unwrap(api.PATCH('/api/v1/runs/{run_id}', { params: { path: { run_id: runId } }, body: { name } })),
    meta: { errorsInline: true },
    onSuccess: (run) => {
      storeRun(qc, run);
      void qc.invalidateQueries({ queryKey: ['projects', run.project_id, 'activity'] });
    },
  });
}

/** Wait before opening a run's event stream again after it was refused or its ticket request failed. */
const STREAM_RETRY_MS = 2000;

/**
 * Follows a run's server-sent events while it is unfinished (lib/runEvents.ts decodes them by the API's
 * `RunEvent` schema): `status` replaces the cached run, `progress` feeds the bar and the ETA, `metrics`
 * tells the charts new steps exist, `end` closes the stream and refreshes the run and its experiment.
 * The stream is opened with a one-minute run read ticket (EventSource cannot send the login header).
 */
export function useRunEvents(run: Run | undefined): LiveState {
  const qc = useQueryClient();
  const [state, setState] = useState<LiveState>(NOT_LIVE);
  const runId = run?.id;
  const finished = run ? isFinished(run.status) : true;
  const runRef = useRef(run);
  runRef.current = run;

  useEffect(() => {
    if (runId === undefined || finished || typeof EventSource === 'undefined') return;
    let source: EventSource | null = null;
    let stopped = false;
    let retry: ReturnType<typeof setTimeout> | undefined;
    const reopenLater = () => {
      if (!stopped) retry = setTimeout(() => void open(), STREAM_RETRY_MS);
    };
    const open = async () => {
      let ticket: string;
      try {
        ticket = (await unwrap(api.POST('/api/v1/runs/{run_id}/read-ticket', { params: { path: { run_id: runId } } }))).ticket;
      } catch {
        return reopenLater();
      }
      if (stopped) return;
      const s = new EventSource(runEventsUrl(runId, ticket));
      source = s;
      s.onopen = () => setState((st) => ({ ...st, connected: true }));
      s.onerror = () => {
        setState((st) => ({ ...st, connected: false }));
        // EventSource retries a dropped connection by itself with the same URL; once the ticket has
        // expired that retry is refused and the source closes: open again with a fresh ticket
        if (s.readyState === EventSource.CLOSED) reopenLater();
      };
      for (const name of RUN_EVENT_NAMES) {
        s.addEventListener(name, (message) => {
          const event = decodeRunEvent(name, String(message.data));
          if (!event) return;
          if (event.event === 'status') storeRun(qc, event.data);
          if (event.event === 'end') {
            stopped = true;
            s.close();
            void qc.invalidateQueries({ queryKey: ['runs', runId] });
            if (runRef.current) void qc.invalidateQueries({ queryKey: ['experiments', runRef.current.experiment_id] });
          }
          setState((st) => applyRunEvent(st, event));
        });
      }
    };
    void open();
    return () => {
      stopped = true;
      clearTimeout(retry);
      source?.close();
    };
  }, [runId, finished, qc]);

  return state;
}

/** Lines of a run's log kept in the page: the tail, however long the log. */
export const LOG_TAIL_LINES = 2000;
const LOG_PAGE = 5000;
const LOG_POLL_MS = 2000;

export interface LogTail {
  lines: { seq: number; time: string; line: string }[];
  loading: boolean;
  error: unknown;
}

/**
 * The tail of a run's log. The API pages forward from a sequence number (`after`), so the hook reads
 * pages until the end, keeps the last LOG_TAIL_LINES, then, while the run is unfinished, asks only for
 * lines after the last one it has.
 */
export function useRunLogTail(runId: number, live: boolean): LogTail {
  const [tail, setTail] = useState<LogTail>({ lines: [], loading: true, error: null });
  useEffect(() => {
    let cancelled = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    let after = 0;
    let lines: LogTail['lines'] = [];
    const pull = async () => {
      try {
        for (;;) {
          const page = await unwrap(api.GET('/api/v1/runs/{run_id}/logs', { params: { path: { run_id: runId }, query: { after, limit: LOG_PAGE } } }));
          if (cancelled) return;
          if (page.items.length) lines = [...lines, ...page.items].slice(-LOG_TAIL_LINES);
          after = page.last_seq;
          if (page.items.length < LOG_PAGE) break;
        }
        setTail({ lines, loading: false, error: null });
      } catch (error) {
        if (!cancelled) setTail((t) => ({ ...t, loading: false, error }));
      }
      if (live && !cancelled) timer = setTimeout(pull, LOG_POLL_MS);
    };
    void pull();
    return () => {
      cancelled = true;
      clearTimeout(timer);
    };
  }, [runId, live]);
  return tail;
}
