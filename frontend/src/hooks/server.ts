import { useQuery } from '@tanstack/react-query';
import { api, unwrap } from '../api/client';

/** What the API says about this deployment (GET /server): MLflow's UI address or null. Read once
 *  (prefetched with every page: src/router.tsx). */
export const serverQuery = () => ({ queryKey: ['server'] as const, queryFn: () => unwrap(api.GET('/api/v1/server')), staleTime: Infinity });

export function useServerConfig() {
  return useQuery(serverQuery());
}
