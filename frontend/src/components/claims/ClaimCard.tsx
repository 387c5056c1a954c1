import { Alert, Button, Card, Group, Stack, Text, Textarea } from '@mantine/core';
import { useState } from 'react';
import { errorMessage } from '../../api/errors';
import type { Claim } from '../../api/types';
import { useMe } from '../../hooks/auth';
import { useClaimComments, useCommentClaim, useDeleteClaim, useLockClaim, useReviewClaim } from '../../hooks/claims';
import { useRole } from '../../hooks/projects';
import { ConfirmDelete } from '../common/ConfirmDelete';
import { AddToReport } from '../reports/AddToReport';
import { ClaimForm } from './ClaimForm';
import { ClaimSummary } from './ClaimSummary';

/** A claim's card: verdict, pre-registration and the version that decided, each arm's n, mean and interval,
 *  each comparison's effect, interval, p-values (raw and adjusted within the family) and the n a power
 *  calculation asks for; lock, approve, edit (the claims form, prefilled), comment and add to a report for
 *  members; delete for its author and the project's admins (as the API allows: `author` is the author's
 *  username), after a confirmation that names the claim. */
export function ClaimCard({ claim, projectId }: { claim: Claim; projectId: number }) {
  const pre = claim.evaluation.preregistration;
  const lock = useLockClaim(projectId);
  const review = useReviewClaim(projectId);
  const del = useDeleteClaim(projectId);
  const role = useRole(projectId);
  const { data: me } = useMe();
  const [showComments, setShowComments] = useState(false);
  const [editing, setEditing] = useState(false);
  const [deleting, setDeleting] = useState(false);
  const canDelete = claim.can_edit && (role === 'admin' || (me !== undefined && claim.author === me.username));
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
      <Button size="xs" variant={editing ? 'filled' : 'subtle'} onClick={() => setEditing((v) => !v)} data-testid={`${testid}-edit`}>
        {editing ? 'Close edit' : 'Edit'}
      </Button>
      {canDelete && (
        <Button size="xs" variant="subtle" color="red" onClick={() => setDeleting(true)} data-testid={`${testid}-delete`}>
          Delete
        </Button>
      )}
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
      {claim.can_edit && editing && (
        <Card withBorder mt="sm" padding="sm">
          <ClaimForm projectId={projectId} claim={claim} onDone={() => setEditing(false)} />
        </Card>
      )}
      {canDelete && (
        <ConfirmDelete what="claim" name={`“${claim.name}”`} target={claim.id} del={del} testid={testid} opened={deleting} onClose={() => setDeleting(false)}>
          Its versions, lock, comments, reviews and rows of the activity feed are deleted with it; this cannot be undone.
        </ConfirmDelete>
      )}
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
