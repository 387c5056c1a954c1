import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { API_PREFIX, api, unwrap } from '../api/client';
import { authStore } from '../api/auth';
import { ApiError } from '../api/errors';
import { allPages } from '../api/pages';
import type { Report, ReportBlock, ReportSummary, SharedReport } from '../api/types';

// Reports (backend/reports/): any role reads, members write, publish, comment, review and share. The draft
// is saved as the author types, each save naming the version it was made on (409: someone saved since).

const reportKey = (id: number) => ['reports', id] as const;
const listKey = (projectId: number) => ['projects', projectId, 'reports'] as const;

// The list's largest page (backend/reports/service.py LIST_MAX, the project's cap too): one request reads
// every report; the pages are followed all the same.
export const REPORTS_PAGE = 500;

/** Every report of the project, the most recently saved first: the list's pages (newest first by id, so
 *  none is missed or repeated while another is saved) read to the end, then ordered by `updated_at`. */
export async function fetchReports(projectId: number): Promise<ReportSummary[]> {
  const items = await allPages((cursor) =>
    unwrap(
      api.GET('/api/v1/projects/{project_id}/reports', {
        params: { path: { project_id: projectId }, query: { limit: REPORTS_PAGE, ...(cursor ? { cursor } : {}) } },
      }),
    ),
  );
  return items.sort((a, b) => Date.parse(b.updated_at) - Date.parse(a.updated_at) || b.id - a.id);
}

export function useReports(projectId: number | undefined) {
  return useQuery({
    queryKey: listKey(projectId ?? 0),
    enabled: projectId !== undefined,
    queryFn: () => fetchReports(projectId!),
  });
}

export function fetchReport(id: number): Promise<Report> {
  return unwrap(api.GET('/api/v1/reports/{report_id}', { params: { path: { report_id: id } } }));
}

export function useReport(id: number) {
  return useQuery({ queryKey: reportKey(id), queryFn: () => fetchReport(id) });
}

/** The draft's data blocks (live ones as of now, frozen ones up to their cut-off), refetched after each save. */
export function useReportData(id: number, version: number | undefined) {
  return useQuery({
    queryKey: [...reportKey(id), 'data', version] as const,
    enabled: version !== undefined,
    queryFn: () => unwrap(api.GET('/api/v1/reports/{report_id}/data', { params: { path: { report_id: id } } })),
    placeholderData: keepPreviousData,
  });
}

export function createReport(projectId: number, title: string, blocks: ReportBlock[] = []): Promise<Report> {
  return unwrap(
    api.POST('/api/v1/projects/{project_id}/reports', { params: { path: { project_id: projectId } }, body: { title, blocks } }),
  );
}

export function saveReport(report: Pick<Report, 'id' | 'version' | 'title'>, blocks: ReportBlock[]): Promise<Report> {
  return unwrap(
    api.PUT('/api/v1/reports/{report_id}', {
      params: { path: { report_id: report.id } },
      body: { base_version: report.version, title: report.title, blocks },
    }),
  );
}

/** Appends a block to a report (or to a new one named `title`): "add to report" from a chart, table or view. */
export async function addToReport(projectId: number, target: number | { title: string }, block: ReportBlock): Promise<Report> {
  if (typeof target !== 'number') return createReport(projectId, target.title, [block]);
  const report = await fetchReport(target);
  return saveReport(report, [...report.blocks, block]);
}

export function useCreateReport(projectId: number) {
  const qc = useQueryClient();
  return useMutation({
    meta: { errorsInline: true },
    mutationFn: (title: string) => createReport(projectId, title),
    onSuccess: () => void qc.invalidateQueries({ queryKey: listKey(projectId) }),
  });
}

export function useSaveReport(id: number) {
  const qc = useQueryClient();
  return useMutation({
    meta: { errorsInline: true },
    mutationFn: ({ report, blocks }: { report: Pick<Report, 'id' | 'version' | 'title'>; blocks: ReportBlock[] }) =>
      saveReport(report, blocks),
    onSuccess: (saved) => qc.setQueryData(reportKey(id), saved),
  });
}

export function usePublish(id: number) {
  const qc = useQueryClient();
  return useMutation({
    meta: { errorsInline: true },
    mutationFn: (version: number) =>
      unwrap(api.POST('/api/v1/reports/{report_id}/publish', { params: { path: { report_id: id } }, body: { base_version: version } })),
    onSuccess: () => void qc.invalidateQueries({ queryKey: reportKey(id) }),
  });
}

export function useRevisions(id: number) {
  return useQuery({
    queryKey: [...reportKey(id), 'revisions'] as const,
    queryFn: () => unwrap(api.GET('/api/v1/reports/{report_id}/revisions', { params: { path: { report_id: id } } })),
  });
}

export function useRevision(id: number, number: number) {
  return useQuery({
    queryKey: [...reportKey(id), 'revisions', number] as const,
    queryFn: () =>
      unwrap(api.GET('/api/v1/reports/{report_id}/revisions/{number}', { params: { path: { report_id: id, number } } })),
  });
}

export function useReportComments(id: number) {
  return useQuery({
    queryKey: [...reportKey(id), 'comments'] as const,
    queryFn: () => unwrap(api.GET('/api/v1/reports/{report_id}/comments', { params: { path: { report_id: id } } })),
  });
}

export function useAddReportComment(id: number) {
  const qc = useQueryClient();
  return useMutation({
    mutationFn: (body: { block_id: string; body: string }) =>
      unwrap(api.POST('/api/v1/reports/{report_id}/comments', { params: { path: { report_id: id } }, body })),
    onSuccess: () => void qc.invalidateQueries({ queryKey: [...reportKey(id), 'comments'] }),
  });
}

export function useReportReviews(id: number) {
  return useQuery({
    queryKey: [...reportKey(id), 'reviews'] as const,
    queryFn: () => unwrap(api.GET('/api/v1/reports/{report_id}/reviews', { params: { path: { report_id: id } } })),
  });
}

export function useReviewRevision(id: number, number: number) {
  const qc = useQueryClient();
  return useMutation({
    mutationFn: (state: 'approved' | 'changes_requested') =>
      unwrap(
        api.POST('/api/v1/reports/{report_id}/revisions/{number}/reviews', {
          params: { path: { report_id: id, number } },
          body: { state, body: '' },
        }),
      ),
    onSuccess: () => void qc.invalidateQueries({ queryKey: [...reportKey(id), 'reviews'] }),
  });
}

export function useShares(id: number, enabled: boolean) {
  return useQuery({
    queryKey: [...reportKey(id), 'shares'] as const,
    enabled,
    queryFn: () => unwrap(api.GET('/api/v1/reports/{report_id}/shares', { params: { path: { report_id: id } } })),
  });
}

export function useCreateShare(id: number, number: number) {
  const qc = useQueryClient();
  return useMutation({
    mutationFn: (body: { expires_in_days: number; hide_authors: boolean }) =>
      unwrap(
        api.POST('/api/v1/reports/{report_id}/revisions/{number}/shares', { params: { path: { report_id: id, number } }, body }),
      ),
    onSuccess: () => void qc.invalidateQueries({ queryKey: [...reportKey(id), 'shares'] }),
  });
}

export function useRevokeShare(id: number) {
  const qc = useQueryClient();
  return useMutation({
    mutationFn: (shareId: number) =>
      unwrap(api.DELETE('/api/v1/reports/{report_id}/shares/{share_id}', { params: { path: { report_id: id, share_id: shareId } } })),
    onSuccess: () => void qc.invalidateQueries({ queryKey: [...reportKey(id), 'shares'] }),
  });
}

/** What a share link opens: asked without the reader's credential (the link is the credential). */
export function useSharedReport(token: string) {
  return useQuery({
    queryKey: ['shared-report', token] as const,
    retry: false,
    queryFn: async () => {
      const response = await fetch(`${API_PREFIX}/shared/reports/${encodeURIComponent(token)}`);
      if (!response.ok) throw await ApiError.from(response);
      return (await response.json()) as SharedReport;
    },
  });
}

/** Downloads a revision's export (the file the API names) through a blob link: the request carries the login. */
export async function downloadExport(id: number, number: number, format: 'html' | 'md' | 'latex'): Promise<void> {
  const response = await fetch(`${API_PREFIX}/reports/${id}/revisions/${number}/export?format=${format}`, {
    headers: { Authorization: `Bearer ${authStore.token() ?? ''}` },
  });
  if (!response.ok) throw await ApiError.from(response);
  const name = /filename="([^"]+)"/.exec(response.headers.get('Content-Disposition') ?? '')?.[1] ?? `report.${format}`;
  const url = URL.createObjectURL(await response.blob());
  const a = document.createElement('a');
  a.href = url;
  a.download = name;
  a.click();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}
