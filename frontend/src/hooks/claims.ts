import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { api, unwrap } from '../api/client';
import { allPages } from '../api/pages';
import type { Claim, ClaimCreate, ClaimDefinition } from '../api/types';

// A project's claims, each with its evaluation on the runs now: the list is asked for again every few
// seconds while the page is open, so a card's n, effect, p-value and verdict change as runs end.
export const CLAIMS_REFRESH_MS = 3000;
// The list's largest page (backend/claims/service.py LIST_MAX, the project's cap too): one request reads
// every claim; the pages are followed all the same.
export const CLAIMS_PAGE = 100;

const claimsKey = (projectId: number) => ['projects', projectId, 'claims'] as const;

/** Every claim of the project by id, each evaluated now: the list's pages read to the end. */
export function fetchClaims(projectId: number): Promise<Claim[]> {
  return allPages((cursor) =>
    unwrap(
      api.GET('/api/v1/projects/{project_id}/claims', {
        params: { path: { project_id: projectId }, query: { limit: CLAIMS_PAGE, ...(cursor ? { cursor } : {}) } },
      }),
    ),
  );
}

export function useClaims(projectId: number | undefined) {
  return useQuery({
    queryKey: claimsKey(projectId ?? 0),
    queryFn: () => fetchClaims(projectId!),
    enabled: projectId !== undefined,
    refetchInterval: CLAIMS_REFRESH_MS,
  });
}

/** States a claim (members); its 422 (field paths) and 409 (a name taken) are the form's to show. */
export function useCreateClaim(projectId: number) {
  const qc = useQueryClient();
  return useMutation({
    meta: { errorsInline: true },
    mutationFn: (body: ClaimCreate) =>
      unwrap(api.POST('/api/v1/projects/{project_id}/claims', { params: { path: { project_id: projectId } }, body })),
    onSuccess: () => void qc.invalidateQueries({ queryKey: claimsKey(projectId) }),
  });
}

/** Renames a claim or replaces its definition (members): the body holds only what changed (lib/claims.ts
 *  `claimPatch`); a changed definition is a new version. Its 422 and 409 (a name taken) are the form's. The
 *  answer, evaluated, replaces the claim in the list at once. */
export function useEditClaim(projectId: number) {
  const qc = useQueryClient();
  return useMutation({
    meta: { errorsInline: true },
    mutationFn: ({ id, body }: { id: number; body: { name?: string; definition?: ClaimDefinition } }) =>
      unwrap(api.PATCH('/api/v1/claims/{claim_id}', { params: { path: { claim_id: id } }, body })),
    onSuccess: (claim) => {
      qc.setQueryData<Claim[]>(claimsKey(projectId), (old) => old?.map((c) => (c.id === claim.id ? claim : c)));
      void qc.invalidateQueries({ queryKey: claimsKey(projectId) });
    },
  });
}

/** Deletes a claim (its author or a project admin; the API's 403 for anyone else is the dialog's to show). */
export function useDeleteClaim(projectId: number) {
  const qc = useQueryClient();
  return useMutation({
    meta: { errorsInline: true },
    mutationFn: (id: number) => unwrap(api.DELETE('/api/v1/claims/{claim_id}', { params: { path: { claim_id: id } } })),
    onSuccess: (_none, id) => {
      qc.setQueryData<Claim[]>(claimsKey(projectId), (old) => old?.filter((c) => c.id !== id));
      void qc.invalidateQueries({ queryKey: claimsKey(projectId) });
    },
  });
}

/** Pre-registers a claim's current version. */
export function useLockClaim(projectId: number) {
  const qc = useQueryClient();
  return useMutation({
    meta: { errorsInline: true },
    mutationFn: (id: number) => unwrap(api.POST('/api/v1/claims/{claim_id}/lock', { params: { path: { claim_id: id } } })),
    onSuccess: () => void qc.invalidateQueries({ queryKey: claimsKey(projectId) }),
  });
}

const commentsKey = (claimId: number) => ['claims', claimId, 'comments'] as const;

export function useClaimComments(claimId: number, enabled: boolean) {
  return useQuery({
    queryKey: commentsKey(claimId),
    queryFn: () => unwrap(api.GET('/api/v1/claims/{claim_id}/comments', { params: { path: { claim_id: claimId } } })),
    enabled,
  });
}

export function useCommentClaim(claimId: number) {
  const qc = useQueryClient();
  return useMutation({
    meta: { errorsInline: true },
    mutationFn: (body: string) =>
      unwrap(api.POST('/api/v1/claims/{claim_id}/comments', { params: { path: { claim_id: claimId } }, body: { body } })),
    onSuccess: () => void qc.invalidateQueries({ queryKey: commentsKey(claimId) }),
  });
}

/** Approves a claim or requests changes; the list's `review` follows. */
export function useReviewClaim(projectId: number) {
  const qc = useQueryClient();
  return useMutation({
    meta: { errorsInline: true },
    mutationFn: ({ id, state }: { id: number; state: 'approved' | 'changes_requested' }) =>
      unwrap(api.PUT('/api/v1/claims/{claim_id}/review', { params: { path: { claim_id: id } }, body: { state, body: '' } })),
    onSuccess: () => void qc.invalidateQueries({ queryKey: claimsKey(projectId) }),
  });
}
