import { useQuery } from '@tanstack/react-query';
import { api, unwrap } from '../api/client';

/** What the API says about this deployment (GET /server): MLflow's UI address or null. Read once. */
export function useServerConfig() {
  return useQuery({
    queryKey: ['server'],
    queryFn: () => unwrap(api.GET('/api/v1/server')),
    staleTime: Infinity,
  });
}
