import { useInfiniteQuery, useQuery } from '@tanstack/react-query';
import { api, unwrap } from '../api/client';
import { DEFAULT_RULE, ruleQuery, type DiffRule } from '../lib/exampleDiff';

export const EXAMPLE_PAGE = 50;

/** A run's per-example tables and their row counts (the Examples tab's picker; for an external run, whether
 * its page has that tab), asked while `enabled`. */
export function useExampleTables(runId: number, live: boolean, enabled = true) {
  return useQuery({
    queryKey: ['runs', runId, 'example-tables'] as const,
    queryFn: () => unwrap(api.GET('/api/v1/runs/{run_id}/example-tables', { params: { path: { run_id: runId } } })),
    refetchInterval: live && enabled ? 5000 : false,
    enabled,
  });
}

/** The other runs of the run's experiment that hold ``table`` (name, id, status, rows), in run order: the
 * diff's picker. Asked only while ``enabled`` (the diff mode is open). */
export function useExamplePeers(runId: number, table: string | null, enabled: boolean) {
  return useQuery({
    queryKey: ['runs', runId, 'example-peers', table] as const,
    enabled: enabled && table !== null,
    queryFn: () =>
      unwrap(
        api.GET('/api/v1/runs/{run_id}/examples/peers', {
          params: { path: { run_id: runId }, query: { table: table!, limit: 1000 } },
        }),
      ),
  });
}

/** A table's rows, page after page from the server (keyset cursor on the row's idx), narrowed by ``q`` (the
 * query language over idx, key and data.<path>; empty: every row). */
export function useExampleRows(runId: number, table: string | null, q = '') {
  return useInfiniteQuery({
    queryKey: ['runs', runId, 'examples', table, q] as const,
    enabled: table !== null,
    initialPageParam: null as string | null,
    queryFn: ({ pageParam }) =>
      unwrap(
        api.GET('/api/v1/runs/{run_id}/examples', {
          params: { path: { run_id: runId }, query: { table: table!, cursor: pageParam, limit: EXAMPLE_PAGE, ...(q.trim() ? { q } : {}) } },
        }),
      ),
    getNextPageParam: (last) => last.next_cursor ?? null,
    retry: false,
  });
}

/** The keys whose rows differ between two runs' table under ``rule`` (its fields, its tolerance for numbers),
 * or that one run lacks, page after page. */
export function useExampleDiff(runId: number, other: number | null, table: string | null, rule: DiffRule = DEFAULT_RULE) {
  return useInfiniteQuery({
    queryKey: ['runs', runId, 'examples-diff', other, table, rule.fields.join(','), rule.rel, rule.abs] as const,
    enabled: table !== null && other !== null,
    initialPageParam: null as string | null,
    queryFn: ({ pageParam }) =>
      unwrap(
        api.GET('/api/v1/runs/{run_id}/examples/diff', {
          params: {
            path: { run_id: runId },
            query: { other: other!, table: table!, cursor: pageParam, limit: EXAMPLE_PAGE, ...ruleQuery(rule) },
          },
        }),
      ),
    getNextPageParam: (last) => last.next_cursor ?? null,
  });
}
