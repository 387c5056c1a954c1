import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { api, unwrap } from '../api/client';
import type { Dataset } from '../api/types';

// A project's datasets: data files a member uploads so that a spec can name them (`dataset:<name>` in a
// data-path field). Any role lists them; a member or admin uploads or replaces one; a project admin or
// whoever uploaded it deletes it (backend/datasets/service.py).

const datasetsKey = (projectId: number) => ['projects', projectId, 'datasets'] as const;

/** The project's datasets by name (any role). */
export const datasetsQuery = (projectId: number) => ({
  queryKey: datasetsKey(projectId),
  queryFn: () => unwrap(api.GET('/api/v1/projects/{project_id}/datasets', { params: { path: { project_id: projectId } } })),
});

export function useDatasets(projectId: number | undefined) {
  return useQuery({ ...datasetsQuery(projectId ?? 0), enabled: projectId !== undefined });
}

export interface DatasetUpload {
  name: string;
  file: Blob;
}

/**
 * The body of an upload: the file's own bytes, not JSON. openapi-fetch's default serializer would
 * `JSON.stringify` a File (into `{}`); a Blob goes to fetch as it is and streams from the disk.
 */
const rawBody = (body: Blob): Blob => body;

/** Uploads or replaces a dataset (members and admins); its errors (422 on the name, 413, 403) are the form's to show. */
export function useUploadDataset(projectId: number) {
  const qc = useQueryClient();
  return useMutation({
    meta: { errorsInline: true },
    // the File stays nowhere once the upload settles
    gcTime: 0,
    mutationFn: ({ name, file }: DatasetUpload) =>
      unwrap(
        api.PUT('/api/v1/projects/{project_id}/datasets/{name}', {
          params: { path: { project_id: projectId, name } },
          body: file,
          bodySerializer: rawBody,
          headers: { 'Content-Type': 'application/octet-stream' },
        }),
      ),
    onSuccess: (dataset) => {
      qc.setQueryData<Dataset[]>(datasetsKey(projectId), (old) => byName(old, dataset));
      void qc.invalidateQueries({ queryKey: datasetsKey(projectId) });
    },
  });
}

/** Deletes a dataset (a project admin or its uploader); runs that start later and name it are refused. */
export function useDeleteDataset(projectId: number) {
  const qc = useQueryClient();
  return useMutation({
    meta: { errorsInline: true },
    mutationFn: (name: string) =>
      unwrap(api.DELETE('/api/v1/projects/{project_id}/datasets/{name}', { params: { path: { project_id: projectId, name } } })),
    onSuccess: (_none, name) => {
      qc.setQueryData<Dataset[]>(datasetsKey(projectId), (old) => old?.filter((d) => d.name !== name));
      void qc.invalidateQueries({ queryKey: datasetsKey(projectId) });
    },
  });
}

function byName(list: readonly Dataset[] | undefined, dataset: Dataset): Dataset[] {
  return [...(list ?? []).filter((d) => d.name !== dataset.name), dataset].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}
