import { Alert, Button, Card, Group, Stack, Text, Textarea } from '@mantine/core';
import { useState } from 'react';
import { errorMessage } from '../../api/errors';
import type { Claim } from '../../api/types';
import { useClaimComments, useCommentClaim, useLockClaim, useReviewClaim } from '../../hooks/claims';
import { AddToReport } from '../reports/AddToReport';
import { ClaimSummary } from './ClaimSummary';

/** A claim's card: verdict, pre-registration and the version that decided, each arm's n, mean and interval,
 *  each comparison's effect, interval, p-values (raw and adjusted within the family) and the n a power
 *  calculation asks for; lock, approve, comment and add to a report for members. */
export function ClaimCard({ claim, projectId }: { claim: Claim; projectId: number }) {
  const pre = claim.evaluation.preregistration;
  const lock = useLockClaim(projectId);
  const review = useReviewClaim(projectId);
  const [showComments, setShowComments] = useState(false);
  const testid = `claim-${claim.id}`;
  const actions = claim.can_edit ? (
    <Group gap="xs">
      <Button
        size="xs"
        variant="light"
        onClick={() => lock.mutate(claim.id)}
        loading={lock.isPending}
        disabled={pre.locked_version === claim.version}
        data-testid={`${testid}-lock`}
      >
        {pre.locked_version === claim.version ? `Version ${claim.version} locked` : `Lock version ${claim.version}`}
      </Button>
      <Button size="xs" variant="subtle" onClick={() => review.mutate({ id: claim.id, state: 'approved' })} loading={review.isPending} data-testid={`${testid}-approve`}>
        Approve
      </Button>
      <AddToReport block={(id) => ({ id, type: 'claim', title: '', claim_id: claim.id, mode: 'frozen' })} />
    </Group>
  ) : null;
  return (
    <Card withBorder padding="md" data-testid={testid} aria-label={`claim ${claim.name}`}>
      <Stack gap="xs">
        <ClaimSummary
          name={claim.name}
          definition={claim.definition}
          evaluation={claim.evaluation}
          testid={testid}
          review={claim.review}
          actions={actions}
          notice={(lock.error || review.error) && <Alert color="red">{errorMessage(lock.error ?? review.error)}</Alert>}
        />
        <Group gap="xs">
          <Button size="xs" variant="subtle" onClick={() => setShowComments((v) => !v)} data-testid={`${testid}-comments-toggle`}>
            {showComments ? 'Hide comments' : 'Comments'}
          </Button>
        </Group>
        {showComments && <ClaimComments claimId={claim.id} canWrite={claim.can_edit} />}
      </Stack>
    </Card>
  );
}

function ClaimComments({ claimId, canWrite }: { claimId: number; canWrite: boolean }) {
  const comments = useClaimComments(claimId, true);
  const post = useCommentClaim(claimId);
  const [body, setBody] = useState('');
  return (
    <Stack gap="xs" data-testid={`claim-${claimId}-comments`}>
      {(comments.data ?? []).map((c) => (
        <Text key={c.id} size="sm">
          <b>{c.author ?? 'someone'}</b>: {c.body}
        </Text>
      ))}
      {comments.data?.length === 0 && <Text size="sm" c="dimmed">No comments yet.</Text>}
      {canWrite && (
        <Group align="flex-end">
          <Textarea size="xs" style={{ flex: 1 }} value={body} onChange={(e) => setBody(e.currentTarget.value)} placeholder="markdown" aria-label="comment" />
          <Button size="xs" disabled={!body.trim()} loading={post.isPending} onClick={() => post.mutate(body, { onSuccess: () => setBody('') })}>
            Comment
          </Button>
        </Group>
      )}
      {post.error && <Alert color="red">{errorMessage(post.error)}</Alert>}
    </Stack>
  );
}
