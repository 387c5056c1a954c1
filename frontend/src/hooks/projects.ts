import { useQuery } from '@tanstack/react-query';
import { createContext, useContext } from 'react';
import { api, unwrap } from '../api/client';
import type { Me, Role } from '../api/types';
import { useMe } from './auth';

/** The projects the signed-in user sees (the layout's switcher; prefetched with every page: src/router.tsx). */
export const projectsQuery = () => ({ queryKey: ['projects'] as const, queryFn: () => unwrap(api.GET('/api/v1/projects')), staleTime: 60_000 });

export function useProjects() {
  return useQuery(projectsQuery());
}

export function useActivity(projectId: number | undefined, limit = 50) {
  return useQuery({
    queryKey: ['projects', projectId, 'activity', limit],
    queryFn: () => unwrap(api.GET('/api/v1/projects/{project_id}/activity', { params: { path: { project_id: projectId! }, query: { limit } } })),
    enabled: projectId !== undefined,
    refetchInterval: 10_000,
  });
}

/** The project the switcher selected: its name (what the API's `project` parameters take) and id. */
export interface CurrentProject {
  id: number | undefined;
  name: string;
  setProject: (name: string) => void;
}
export const ProjectContext = createContext<CurrentProject>({ id: undefined, name: 'default', setProject: () => {} });
export const useCurrentProject = () => useContext(ProjectContext);

export function roleIn(me: Me | undefined, projectId: number | undefined): Role | null {
  if (!me) return null;
  if (me.is_admin) return 'admin';
  const m = me.memberships.find((x) => x.project_id === projectId);
  return (m?.role as Role | undefined) ?? null;
}

/** The signed-in user's role in a project (site admins are admins everywhere); null while unknown or none. */
export function useRole(projectId: number | undefined): Role | null {
  const { data: me } = useMe();
  return roleIn(me, projectId);
}

/** Whether the signed-in user may submit, cancel, retry, comment, review and tag in a project. */
export function useCanWrite(projectId: number | undefined): boolean {
  const role = useRole(projectId);
  return role === 'admin' || role === 'member';
}
