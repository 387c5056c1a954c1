// What a share link opens, for a reader without an account: one published revision, its blocks and their
// frozen data, and nothing else (no navigation into the project; author names absent when the link hides them).
import { Container, Stack, Text, Title } from '@mantine/core';
import { useParams } from 'react-router';
import { QueryState } from '../components/common/QueryState';
import { useSharedReport } from '../hooks/reports';
import { blockData, ReportView } from '../reports/ReportView';

export function SharedReportPage() {
  const token = useParams().token ?? '';
  const shared = useSharedReport(token);
  return (
    <Container size="md" py="lg">
      <QueryState isPending={shared.isPending} error={shared.error}>
        {() =>
          shared.data ? (
            <Stack>
              <Title order={2}>{shared.data.title}</Title>
              <Text size="sm" c="dimmed" data-testid="shared-meta">
                Revision {shared.data.number}
                {shared.data.author ? ` by ${shared.data.author}` : ''}, published {new Date(shared.data.published_at).toISOString().slice(0, 16).replace('T', ' ')} UTC; read-only link, expires{' '}
                {new Date(shared.data.expires_at).toISOString().slice(0, 10)}
              </Text>
              <ReportView blocks={shared.data.blocks} data={blockData(shared.data.data)} />
            </Stack>
          ) : null
        }
      </QueryState>
    </Container>
  );
}
