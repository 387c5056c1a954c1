import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useSyncExternalStore } from 'react';
import { authStore } from '../api/auth';
import { api, unwrap } from '../api/client';
import { earlyKey, takeEarlyOr } from '../early';

export function useToken(): string | null {
  return useSyncExternalStore(authStore.subscribe, authStore.token, authStore.token);
}

export function useMe() {
  const token = useToken();
  return useQuery({
    queryKey: ['me', token],
    // the page's first ask takes the answer src/early.ts started before the dashboard's code arrived
    queryFn: () => takeEarlyOr(earlyKey.me(), () => unwrap(api.GET('/api/v1/auth/me'))),
    enabled: token !== null,
    staleTime: 60_000,
  });
}

export function useLogin() {
  const qc = useQueryClient();
  return useMutation({
    meta: { formErrors: true },
    mutationFn: (body: { username: string; password: string }) => unwrap(api.POST('/api/v1/auth/login', { body })),
    onSuccess: (res) => {
      qc.clear();
      authStore.signIn(res.access_token, res.expires_at);
    },
  });
}

export function useLogout() {
  const qc = useQueryClient();
  return () => {
    authStore.signOut();
    qc.clear();
  };
}
