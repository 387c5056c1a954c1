import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { api, unwrap } from '../api/client';

export type Target = { type: 'experiment'; id: number } | { type: 'run'; id: number };

export function useComments(target: Target) {
  return useQuery({
    queryKey: [target.type === 'experiment' ? 'experiments' : 'runs', target.id, 'comments'],
    queryFn: () =>
      target.type === 'experiment'
        ? unwrap(api.GET('/api/v1/experiments/{experiment_id}/comments', { params: { path: { experiment_id: target.id } } }))
        : unwrap(api.GET('/api/v1/runs/{run_id}/comments', { params: { path: { run_id: target.id } } })),
  });
}

export function useAddComment(target: Target) {
  const qc = useQueryClient();
  return useMutation({
    mutationFn: (body: string) =>
      target.type === 'experiment'
        ? unwrap(api.POST('/api/v1/experiments/{experiment_id}/comments', { params: { path: { experiment_id: target.id } }, body: { body } }))
        : unwrap(api.POST('/api/v1/runs/{run_id}/comments', { params: { path: { run_id: target.id } }, body: { body } })),
    onSuccess: () => qc.invalidateQueries({ queryKey: [target.type === 'experiment' ? 'experiments' : 'runs', target.id, 'comments'] }),
  });
}

export function useReviews(experimentId: number) {
  return useQuery({
    queryKey: ['experiments', experimentId, 'reviews'],
    queryFn: () => unwrap(api.GET('/api/v1/experiments/{experiment_id}/reviews', { params: { path: { experiment_id: experimentId } } })),
  });
}

export function useSubmitReview(experimentId: number) {
  const qc = useQueryClient();
  return useMutation({
    mutationFn: (review: { state: 'approved' | 'changes_requested'; body?: string | null }) =>
      unwrap(
        api.PUT('/api/v1/experiments/{experiment_id}/review', {
          params: { path: { experiment_id: experimentId } },
          body: { state: review.state, body: review.body ?? '' },
        }),
      ),
    onSuccess: () => qc.invalidateQueries({ queryKey: ['experiments'] }),
  });
}

export function useTag(target: Target) {
  const qc = useQueryClient();
  return useMutation({
    mutationFn: ({ tag, add }: { tag: string; add: boolean }) => {
      if (target.type === 'experiment') {
        const params = { params: { path: { experiment_id: target.id, tag } } };
        return unwrap(add ? api.PUT('/api/v1/experiments/{experiment_id}/tags/{tag}', params) : api.DELETE('/api/v1/experiments/{experiment_id}/tags/{tag}', params));
      }
      const params = { params: { path: { run_id: target.id, tag } } };
      return unwrap(add ? api.PUT('/api/v1/runs/{run_id}/tags/{tag}', params) : api.DELETE('/api/v1/runs/{run_id}/tags/{tag}', params));
    },
    onSettled: () => Promise.all([qc.invalidateQueries({ queryKey: ['experiments'] }), qc.invalidateQueries({ queryKey: ['runs'] })]),
  });
}
