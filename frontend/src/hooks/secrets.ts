import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { api, unwrap } from '../api/client';
import type { Secret } from '../api/types';

// A project's secrets: names, who set them and when, for anyone in the project; a project
// admin sets, replaces and deletes them. No answer of the API holds a value, and nothing here keeps one.

const secretsKey = (projectId: number) => ['projects', projectId, 'secrets'] as const;

/** The project's secrets by name (any role: specs name them). */
export const secretsQuery = (projectId: number) => ({
  queryKey: secretsKey(projectId),
  queryFn: () => unwrap(api.GET('/api/v1/projects/{project_id}/secrets', { params: { path: { project_id: projectId } } })),
});

export function useSecrets(projectId: number | undefined) {
  return useQuery({ ...secretsQuery(projectId ?? 0), enabled: projectId !== undefined });
}

/**
 * What the form hands the mutation. The mutation takes the value out of it as it sends it: TanStack keeps
 * a mutation's variables in its state (and its cache) after it settles, and a value must not stay there.
 */
export interface SecretDraft {
  name: string;
  value: string;
  /** where the secret may be sent (the API's entries: host names, *.domain, addresses, URL prefixes) */
  hosts: string[];
}

function byName(list: readonly Secret[] | undefined, secret: Secret): Secret[] {
  return [...(list ?? []).filter((s) => s.name !== secret.name), secret].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

/** Sets or replaces a secret with its hosts (project admins); its errors (422 on the name, the value or a host, 403) are the form's to show. */
export function useSetSecret(projectId: number) {
  const qc = useQueryClient();
  return useMutation({
    meta: { errorsInline: true },
    gcTime: 0,
    mutationFn: (draft: SecretDraft) => {
      const { name, value, hosts } = draft;
      draft.value = '';
      return unwrap(api.PUT('/api/v1/projects/{project_id}/secrets/{name}', { params: { path: { project_id: projectId, name } }, body: { value, hosts } }));
    },
    onSuccess: (secret) => {
      qc.setQueryData<Secret[]>(secretsKey(projectId), (old) => byName(old, secret));
      void qc.invalidateQueries({ queryKey: secretsKey(projectId) });
    },
  });
}

/** Where a secret may be sent, its value untouched (project admins); a 422 names the host entry. */
export function useSetSecretHosts(projectId: number) {
  const qc = useQueryClient();
  return useMutation({
    meta: { errorsInline: true },
    mutationFn: ({ name, hosts }: { name: string; hosts: string[] }) =>
      unwrap(api.PATCH('/api/v1/projects/{project_id}/secrets/{name}', { params: { path: { project_id: projectId, name } }, body: { hosts } })),
    onSuccess: (secret) => {
      qc.setQueryData<Secret[]>(secretsKey(projectId), (old) => byName(old, secret));
      void qc.invalidateQueries({ queryKey: secretsKey(projectId) });
    },
  });
}

/** Deletes a secret (project admins); runs whose spec names it are refused from then on. */
export function useDeleteSecret(projectId: number) {
  const qc = useQueryClient();
  return useMutation({
    meta: { errorsInline: true },
    mutationFn: (name: string) => unwrap(api.DELETE('/api/v1/projects/{project_id}/secrets/{name}', { params: { path: { project_id: projectId, name } } })),
    onSuccess: (_none, name) => {
      qc.setQueryData<Secret[]>(secretsKey(projectId), (old) => old?.filter((s) => s.name !== name));
      void qc.invalidateQueries({ queryKey: secretsKey(projectId) });
    },
  });
}
