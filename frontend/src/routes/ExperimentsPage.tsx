import { Anchor, Button, Group, Select, Stack, Table, Text, TextInput, Title } from '@mantine/core';
import { useMemo, useState } from 'react';
import { Link } from 'react-router';
import { QueryState } from '../components/common/QueryState';
import { StatusCounts } from '../components/common/StatusChip';
import { timeAgo } from '../components/common/time';
import { ReviewBadge } from '../components/review/ReviewPanel';
import { useExperiments } from '../hooks/experiments';
import { useCanWrite, useCurrentProject } from '../hooks/projects';
import { filterExperiments, kindsOf, NO_FILTER, type ExperimentFilter } from '../lib/experimentsFilter';
import { isRunStatus, RUN_STATUSES } from '../lib/runStatus';

export function ExperimentsPage() {
  const project = useCurrentProject();
  const canWrite = useCanWrite(project.id);
  const experiments = useExperiments(project.name);
  const [filter, setFilter] = useState<ExperimentFilter>(NO_FILTER);
  const items = experiments.data?.items;
  const kinds = useMemo(() => kindsOf(items ?? []), [items]);
  const shown = useMemo(() => filterExperiments(items ?? [], filter), [items, filter]);
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
      <Group gap="sm" align="flex-end">
        <TextInput
          label="Search"
          placeholder="name, #id, tag or author"
          value={filter.search}
          onChange={(e) => setFilter({ ...filter, search: e.currentTarget.value })}
          w={260}
          data-testid="experiments-search"
        />
        <Select
          label="Kind"
          placeholder="any"
          clearable
          data={kinds}
          value={filter.kind}
          onChange={(kind) => setFilter({ ...filter, kind })}
          w={180}
        />
        <Select
          label="Has runs"
          placeholder="any status"
          clearable
          data={[...RUN_STATUSES]}
          value={filter.status}
          onChange={(s) => setFilter({ ...filter, status: s && isRunStatus(s) ? s : null })}
          w={160}
        />
        {items && shown.length !== items.length && (
          <Text size="sm" c="dimmed" data-testid="experiments-shown">
            {shown.length} of {items.length}
          </Text>
        )}
      </Group>
      <QueryState isPending={experiments.isPending} error={experiments.error}>
        {() =>
          experiments.data!.items.length === 0 ? (
            <Text c="dimmed">No experiments yet.</Text>
          ) : shown.length === 0 ? (
            <Text c="dimmed">No experiment matches.</Text>
          ) : (
            <Table striped highlightOnHover withTableBorder aria-label="experiments">
              <Table.Thead>
                <Table.Tr>
                  <Table.Th>★</Table.Th>
                  <Table.Th>id</Table.Th>
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
                {shown.map((e) => (
                  <Table.Tr key={e.id} data-experiment-id={e.id}>
                    <Table.Td>{e.starred ? '★' : ''}</Table.Td>
                    <Table.Td c="dimmed">{e.id}</Table.Td>
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
