import { useMutation, useQueries, useQuery, useQueryClient } from '@tanstack/react-query';
import { useEffect, useRef, useState } from 'react';
import { api, runEventsUrl, unwrap } from '../api/client';
import type { ExperimentDetail, Run } from '../api/types';
import { addSample, type ProgressSample } from '../lib/eta';
import { FINISHED } from '../lib/runsTable';

const runQuery = (id: number) => ({
  queryKey: ['runs', id] as const,
  queryFn: () => unwrap(api.GET('/api/v1/runs/{run_id}', { params: { path: { run_id: id } } })),
});

export function useRun(id: number) {
  return useQuery(runQuery(id));
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

export interface LiveState {
  progress: { done: number; total: number | null; message: string | null } | null;
  samples: ProgressSample[];
  /** latest step per metric key, from `metrics` events */
  steps: Record<string, number>;
  connected: boolean;
}

/**
 * Follows a run's server-sent events while it is unfinished: `status` replaces the cached run,
 * `progress` feeds the bar and the ETA, `metrics` tells the charts new steps exist, `end` closes.
 */
export function useRunEvents(run: Run | undefined): LiveState {
  const qc = useQueryClient();
  const [state, setState] = useState<LiveState>({ progress: null, samples: [], steps: {}, connected: false });
  const runId = run?.id;
  const finished = run ? FINISHED.has(run.status) : true;
  const runRef = useRef(run);
  runRef.current = run;

  useEffect(() => {
    if (runId === undefined || finished || typeof EventSource === 'undefined') return;
    const source = new EventSource(runEventsUrl(runId));
    const parse = (e: MessageEvent) => {
      try {
        return JSON.parse(e.data as string) as unknown;
      } catch {
        return null;
      }
    };
    source.onopen = () => setState((s) => ({ ...s, connected: true }));
    source.onerror = () => setState((s) => ({ ...s, connected: false }));
    source.addEventListener('status', (e) => {
      const r = parse(e as MessageEvent) as Run | null;
      if (r && typeof r === 'object' && 'id' in r) storeRun(qc, r);
    });
    source.addEventListener('progress', (e) => {
      const p = parse(e as MessageEvent) as { done: number; total?: number | null; message?: string | null } | null;
      if (!p) return;
      setState((s) => ({
        ...s,
        progress: { done: p.done, total: p.total ?? null, message: p.message ?? null },
        samples: addSample(s.samples, { done: p.done, at: Date.now() }),
      }));
    });
    source.addEventListener('metrics', (e) => {
      const m = parse(e as MessageEvent) as { steps?: Record<string, number> } | null;
      if (m?.steps) setState((s) => ({ ...s, steps: { ...s.steps, ...m.steps } }));
    });
    source.addEventListener('end', () => {
      source.close();
      setState((s) => ({ ...s, connected: false }));
      void qc.invalidateQueries({ queryKey: ['runs', runId] });
      if (runRef.current) void qc.invalidateQueries({ queryKey: ['experiments', runRef.current.experiment_id] });
    });
    return () => source.close();
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
