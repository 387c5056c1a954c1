import { Anchor, Button, Group, Stack, Table, Text, Title } from '@mantine/core';
import { Link } from 'react-router';
import { QueryState } from '../components/common/QueryState';
import { StatusCounts } from '../components/common/StatusChip';
import { timeAgo } from '../components/common/time';
import { ReviewBadge } from '../components/review/ReviewPanel';
import { useExperiments } from '../hooks/experiments';
import { useCanWrite, useCurrentProject } from '../hooks/projects';

export function ExperimentsPage() {
  const project = useCurrentProject();
  const canWrite = useCanWrite(project.id);
  const experiments = useExperiments(project.name);
  return (
    <Stack>
      <Group justify="space-between">
        <Title order={2}>Experiments in {project.name}</Title>
        {canWrite && (
          <Button component={Link} to="/experiments/new" data-testid="new-experiment">
            New experiment
          </Button>
        )}
      </Group>
      <QueryState isPending={experiments.isPending} error={experiments.error}>
        {() =>
          experiments.data!.items.length === 0 ? (
            <Text c="dimmed">No experiments yet.</Text>
          ) : (
            <Table striped highlightOnHover withTableBorder aria-label="experiments">
              <Table.Thead>
                <Table.Tr>
                  <Table.Th>★</Table.Th>
                  <Table.Th>Name</Table.Th>
                  <Table.Th>Kind</Table.Th>
                  <Table.Th>Runs</Table.Th>
                  <Table.Th>Review</Table.Th>
                  <Table.Th>Tags</Table.Th>
                  <Table.Th>Author</Table.Th>
                  <Table.Th>Created</Table.Th>
                </Table.Tr>
              </Table.Thead>
              <Table.Tbody>
                {experiments.data!.items.map((e) => (
                  <Table.Tr key={e.id} data-experiment-id={e.id}>
                    <Table.Td>{e.starred ? '★' : ''}</Table.Td>
                    <Table.Td>
                      <Anchor component={Link} to={`/experiments/${e.id}`}>
                        {e.name}
                      </Anchor>
                    </Table.Td>
                    <Table.Td>{e.kind}</Table.Td>
                    <Table.Td>
                      <StatusCounts counts={e.status_counts} />
                    </Table.Td>
                    <Table.Td>
                      <ReviewBadge state={e.review_state} />
                    </Table.Td>
                    <Table.Td>{e.tags.join(', ')}</Table.Td>
                    <Table.Td>{e.author}</Table.Td>
                    <Table.Td>{timeAgo(e.created_at)}</Table.Td>
                  </Table.Tr>
                ))}
              </Table.Tbody>
            </Table>
          )
        }
      </QueryState>
    </Stack>
  );
}
