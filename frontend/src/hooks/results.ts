import { useQuery } from '@tanstack/react-query';
import { api, unwrap } from '../api/client';

export function useRunResults(runId: number, live: boolean) {
  return useQuery({
    queryKey: ['runs', runId, 'results'],
    queryFn: () => unwrap(api.GET('/api/v1/runs/{run_id}/results', { params: { path: { run_id: runId }, query: {} } })),
    refetchInterval: live ? 5000 : false,
  });
}
