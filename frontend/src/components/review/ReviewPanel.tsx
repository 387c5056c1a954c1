import { Badge, Button, Group, Stack, Text, Textarea } from '@mantine/core';
import { useState } from 'react';
import { useReviews, useSubmitReview } from '../../hooks/review';
import { timeAgo } from '../common/time';

export const REVIEW_LABELS: Record<string, { label: string; color: string }> = {
  approved: { label: 'approved', color: 'green' },
  changes_requested: { label: 'changes requested', color: 'orange' },
};

export function ReviewBadge({ state }: { state: string | null | undefined }) {
  if (!state) return <Badge variant="outline" color="gray">not reviewed</Badge>;
  const s = REVIEW_LABELS[state] ?? { label: state, color: 'gray' };
  return (
    <Badge color={s.color} data-testid="review-state">
      {s.label}
    </Badge>
  );
}

export function ReviewPanel({ experimentId, canWrite }: { experimentId: number; canWrite: boolean }) {
  const reviews = useReviews(experimentId);
  const submit = useSubmitReview(experimentId);
  const [body, setBody] = useState('');
  const send = (state: 'approved' | 'changes_requested') => submit.mutate({ state, body: body.trim() || null }, { onSuccess: () => setBody('') });
  return (
    <Stack gap="sm" data-testid="reviews">
      {(reviews.data ?? []).map((r) => (
        <Group key={r.id} gap="xs" align="flex-start">
          <ReviewBadge state={r.state} />
          <Text size="sm" fw={600}>{r.reviewer}</Text>
          <Text size="xs" c="dimmed">{timeAgo(r.created_at)}</Text>
          {r.body && <Text size="sm">{r.body}</Text>}
        </Group>
      ))}
      {reviews.data?.length === 0 && <Text size="sm" c="dimmed">No reviews yet.</Text>}
      {canWrite && (
        <>
          <Textarea label="Review note (optional)" value={body} onChange={(e) => setBody(e.currentTarget.value)} autosize minRows={1} />
          <Group>
            <Button size="xs" color="green" onClick={() => send('approved')} loading={submit.isPending && submit.variables?.state === 'approved'}>
              Approve
            </Button>
            <Button size="xs" color="orange" variant="light" onClick={() => send('changes_requested')} loading={submit.isPending && submit.variables?.state === 'changes_requested'}>
              Request changes
            </Button>
          </Group>
        </>
      )}
    </Stack>
  );
}
