import { useQuery } from '@tanstack/react-query';
import { api, unwrap } from '../api/client';

export function useKinds() {
  return useQuery({ queryKey: ['kinds'], queryFn: () => unwrap(api.GET('/api/v1/kinds')), staleTime: 5 * 60_000 });
}
