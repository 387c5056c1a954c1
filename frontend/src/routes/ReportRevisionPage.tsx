// A published revision: what it shows (frozen blocks as published, live ones as of now), its content hash
// and author, reviews (approve, or request changes), exports (HTML that opens offline, Markdown with SVG
// figures, a LaTeX folder) and read-only share links (expiring, revocable, optionally hiding names).
import { Alert, Anchor, Badge, Button, Checkbox, Code, Group, NumberInput, Paper, Stack, Table, Text, Title } from '@mantine/core';
import { useState } from 'react';
import { Link, useParams } from 'react-router';
import { errorMessage } from '../api/errors';
import { QueryState } from '../components/common/QueryState';
import { timeAgo } from '../components/common/time';
import {
  downloadExport,
  useCreateShare,
  useReport,
  useReportReviews,
  useRevision,
  useReviewRevision,
  useRevokeShare,
  useShares,
} from '../hooks/reports';
import { blockData, ReportView } from '../reports/ReportView';

function Shares({ reportId, number }: { reportId: number; number: number }) {
  const shares = useShares(reportId, true);
  const create = useCreateShare(reportId, number);
  const revoke = useRevokeShare(reportId);
  const [days, setDays] = useState<number | string>(14);
  const [hide, setHide] = useState(false);
  const created = create.data;
  return (
    <Paper withBorder p="sm">
      <Title order={4}>Share a read-only link</Title>
      <Group align="flex-end" mt="xs">
        <NumberInput label="Expires in (days)" min={1} max={365} value={days} onChange={setDays} w={140} />
        <Checkbox label="Hide author names (double-blind)" checked={hide} onChange={(e) => setHide(e.currentTarget.checked)} />
        <Button
          loading={create.isPending}
          onClick={() => create.mutate({ expires_in_days: Number(days) || 14, hide_authors: hide })}
          data-testid="create-share"
        >
          Create link
        </Button>
      </Group>
      {create.error && <Alert color="red" mt="xs">{errorMessage(create.error)}</Alert>}
      {created && (
        <Alert color="green" mt="xs" title="Link created: copy it now, it is shown once">
          <Code data-testid="share-url">{`${window.location.origin}/shared/reports/${created.token}`}</Code>
        </Alert>
      )}
      {(shares.data ?? []).length > 0 && (
        <Table mt="xs" fz="sm">
          <Table.Tbody>
            {(shares.data ?? []).map((s) => (
              <Table.Tr key={s.id}>
                <Table.Td>{s.prefix}…</Table.Td>
                <Table.Td>revision {s.revision}</Table.Td>
                <Table.Td>{s.hide_authors ? 'names hidden' : 'names shown'}</Table.Td>
                <Table.Td>{s.revoked_at ? 'revoked' : `expires ${new Date(s.expires_at).toISOString().slice(0, 10)}`}</Table.Td>
                <Table.Td>
                  {!s.revoked_at && (
                    <Button size="compact-xs" color="red" variant="subtle" onClick={() => revoke.mutate(s.id)}>
                      Revoke
                    </Button>
                  )}
                </Table.Td>
              </Table.Tr>
            ))}
          </Table.Tbody>
        </Table>
      )}
    </Paper>
  );
}

export function ReportRevisionPage() {
  const params = useParams();
  const id = Number(params.id);
  const number = Number(params.number);
  const report = useReport(id);
  const revision = useRevision(id, number);
  const reviews = useReportReviews(id);
  const review = useReviewRevision(id, number);
  const [exportError, setExportError] = useState<string | null>(null);
  const canEdit = report.data?.can_edit ?? false;
  const mine = (reviews.data ?? []).filter((r) => r.revision === number);
  return (
    <QueryState isPending={revision.isPending} error={revision.error}>
      {() =>
        revision.data ? (
          <Stack>
            <Group justify="space-between">
              <Stack gap={2}>
                <Title order={2}>{revision.data.title}</Title>
                <Text size="sm" c="dimmed" data-testid="revision-meta">
                  Revision {revision.data.number} by {revision.data.author ?? 'someone'}, published {timeAgo(revision.data.created_at)}; sha256{' '}
                  {revision.data.content_hash.slice(0, 12)}…
                </Text>
                <Anchor size="sm" component={Link} to={`/reports/${id}`}>back to the draft</Anchor>
              </Stack>
              <Group gap="xs">
                {(['html', 'md', 'latex'] as const).map((f) => (
                  <Button
                    key={f}
                    size="xs"
                    variant="default"
                    data-testid={`export-${f}`}
                    onClick={() => downloadExport(id, number, f).then(() => setExportError(null), (e: unknown) => setExportError(errorMessage(e)))}
                  >
                    Export {f === 'md' ? 'Markdown' : f === 'latex' ? 'LaTeX' : 'HTML'}
                  </Button>
                ))}
              </Group>
            </Group>
            {exportError && <Alert color="red">{exportError}</Alert>}
            <Group gap="xs">
              {mine.map((r) => (
                <Badge key={r.id} color={r.state === 'approved' ? 'green' : 'orange'} data-testid="report-review">
                  {r.reviewer}: {r.state === 'approved' ? 'approved' : 'changes requested'}
                </Badge>
              ))}
              {canEdit && (
                <>
                  <Button size="xs" color="green" loading={review.isPending} onClick={() => review.mutate('approved')}>
                    Approve
                  </Button>
                  <Button size="xs" color="orange" variant="light" onClick={() => review.mutate('changes_requested')}>
                    Request changes
                  </Button>
                </>
              )}
            </Group>
            <ReportView blocks={revision.data.blocks} data={blockData(revision.data.data)} />
            {canEdit && <Shares reportId={id} number={number} />}
          </Stack>
        ) : null
      }
    </QueryState>
  );
}
