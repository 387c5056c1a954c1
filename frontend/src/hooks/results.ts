import { useQuery } from '@tanstack/react-query';
import { api, unwrap } from '../api/client';

/** A run's results (the run page's Results tab and its count; prefetched by the run page's route). */
export const runResultsQuery = (runId: number) => ({
  queryKey: ['runs', runId, 'results'] as const,
  queryFn: () => unwrap(api.GET('/api/v1/runs/{run_id}/results', { params: { path: { run_id: runId }, query: {} } })),
});

export function useRunResults(runId: number, live: boolean) {
  return useQuery({ ...runResultsQuery(runId), refetchInterval: live ? 5000 : false });
}
