import { Alert, Badge, Button, Card, Group, Stack, Table, Text, Textarea, Title } from '@mantine/core';
import { useState } from 'react';
import { errorMessage } from '../../api/errors';
import type { Claim } from '../../api/types';
import { useClaimComments, useCommentClaim, useLockClaim, useReviewClaim } from '../../hooks/claims';
import { interval, num, pValue, PREREG_COLOURS, readingText, testText, VERDICT_COLOURS } from '../../lib/claims';

/** A claim's card: verdict, pre-registration and the version that decided, each arm's n, mean and interval,
 *  each comparison's effect, interval, p-values (raw and adjusted within the family) and the n a power
 *  calculation asks for; lock, approve and comment for members. */
export function ClaimCard({ claim, projectId }: { claim: Claim; projectId: number }) {
  const ev = claim.evaluation;
  const pre = ev.preregistration;
  const d = claim.definition;
  const lock = useLockClaim(projectId);
  const review = useReviewClaim(projectId);
  const [showComments, setShowComments] = useState(false);
  const testid = `claim-${claim.id}`;
  return (
    <Card withBorder padding="md" data-testid={testid} aria-label={`claim ${claim.name}`}>
      <Stack gap="xs">
        <Group justify="space-between" wrap="nowrap">
          <Group gap="xs">
            <Title order={4}>{claim.name}</Title>
            <Badge color={VERDICT_COLOURS[ev.verdict]} data-testid={`${testid}-verdict`}>{ev.verdict}</Badge>
            <Badge color={PREREG_COLOURS[pre.status]} variant="light" data-testid={`${testid}-prereg`}>{pre.status}</Badge>
            {claim.review && <Badge color={claim.review === 'approved' ? 'teal' : 'orange'} variant="outline">{claim.review.replace('_', ' ')}</Badge>}
          </Group>
          {claim.can_edit && (
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
            </Group>
          )}
        </Group>
        <Text size="sm" c="dimmed" data-testid={`${testid}-version`}>
          {d.section} · version {ev.version} decided (sha256 {ev.hash.slice(0, 12)})
          {pre.locked_at ? ` · version ${pre.locked_version} locked by ${pre.locked_by ?? 'someone'} at ${pre.locked_at.slice(0, 19).replace('T', ' ')}` : ''}
        </Text>
        <Text size="sm">
          {d.metric} ({readingText(d.read)}), each arm {d.direction} than {d.arms[0]?.name}
          {d.min_effect ? ` by at least ${d.min_effect}` : ''}; {testText(d.test)}, alpha {d.alpha}, family {ev.family}{' '}
          ({ev.family_size} {ev.family_size === 1 ? 'hypothesis' : 'hypotheses'}, Holm)
        </Text>
        {(lock.error || review.error) && <Alert color="red">{errorMessage(lock.error ?? review.error)}</Alert>}
        <Table withTableBorder striped aria-label={`arms of ${claim.name}`} data-testid={`${testid}-arms`}>
          <Table.Thead>
            <Table.Tr>
              <Table.Th>arm</Table.Th>
              <Table.Th>query</Table.Th>
              <Table.Th>n</Table.Th>
              <Table.Th>mean</Table.Th>
              <Table.Th>{Math.round((1 - d.alpha) * 100)}% CI</Table.Th>
            </Table.Tr>
          </Table.Thead>
          <Table.Tbody>
            {ev.arms.map((a, i) => (
              <Table.Tr key={a.name}>
                <Table.Td>{a.name}</Table.Td>
                <Table.Td><Text size="xs" ff="monospace">{d.arms[i]?.query}</Text></Table.Td>
                <Table.Td data-testid={`${testid}-n-${i}`}>{a.n}</Table.Td>
                <Table.Td>{num(a.mean)}</Table.Td>
                <Table.Td>{interval(a.ci_low, a.ci_high)}</Table.Td>
              </Table.Tr>
            ))}
          </Table.Tbody>
        </Table>
        <Table withTableBorder aria-label={`comparisons of ${claim.name}`} data-testid={`${testid}-comparisons`}>
          <Table.Thead>
            <Table.Tr>
              <Table.Th>comparison</Table.Th>
              <Table.Th>test</Table.Th>
              <Table.Th>effect</Table.Th>
              <Table.Th>CI</Table.Th>
              <Table.Th>p</Table.Th>
              <Table.Th>p (Holm)</Table.Th>
              <Table.Th>verdict</Table.Th>
            </Table.Tr>
          </Table.Thead>
          <Table.Tbody>
            {ev.comparisons.map((c) => (
              <Table.Tr key={c.arm}>
                <Table.Td>{c.arm} − {c.reference}</Table.Td>
                <Table.Td>{c.test ?? '-'}{c.test ? ` (n ${c.n})` : ''}</Table.Td>
                <Table.Td>{num(c.effect)}</Table.Td>
                <Table.Td>{interval(c.ci_low, c.ci_high)}</Table.Td>
                <Table.Td>{pValue(c.p_value)}</Table.Td>
                <Table.Td>{pValue(c.p_adjusted)}</Table.Td>
                <Table.Td>
                  <Badge size="sm" color={VERDICT_COLOURS[c.verdict]} variant="light">{c.verdict}</Badge>
                  <Text size="xs" c="dimmed">
                    {c.reason}
                    {c.needed_n !== null ? ` · about ${c.needed_n} ${c.test === 'paired' || c.test === 'bootstrap_paired' ? 'pairs' : 'runs per arm'} would decide` : ''}
                  </Text>
                </Table.Td>
              </Table.Tr>
            ))}
          </Table.Tbody>
        </Table>
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
