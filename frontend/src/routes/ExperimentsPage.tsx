import { Anchor, Button, Group, Select, Stack, Table, Text, TextInput, Title } from '@mantine/core';
import { useMemo, useState } from 'react';
import { Link } from 'react-router';
import { QueryState } from '../components/common/QueryState';
import { StatusCounts } from '../components/common/StatusChip';
import { timeAgo } from '../components/common/time';
import { ReviewBadge } from '../components/review/ReviewPanel';
import { SaveViewButton } from '../components/views/SaveViewButton';
import { useExperiments } from '../hooks/experiments';
import { useCanWrite, useCurrentProject } from '../hooks/projects';
import { useUrlViewState } from '../hooks/views';
import { filterExperiments, kindsOf, NO_FILTER, type ExperimentFilter } from '../lib/experimentsFilter';
import { isRunStatus, RUN_STATUSES } from '../lib/runStatus';

export function ExperimentsPage() {
  const project = useCurrentProject();
  const canWrite = useCanWrite(project.id);
  const experiments = useExperiments(project.name);
  // the search is the view's query, kept in the URL (lib/viewState.ts): a saved view or a shared link
  // opens the page searching for it
  const [view, setView] = useUrlViewState();
  const [narrow, setNarrow] = useState<Omit<ExperimentFilter, 'search'>>(NO_FILTER);
  const filter = useMemo<ExperimentFilter>(() => ({ ...narrow, search: view.query }), [narrow, view.query]);
  const items = experiments.data?.items;
  const kinds = useMemo(() => kindsOf(items ?? []), [items]);
  const shown = useMemo(() => filterExperiments(items ?? [], filter), [items, filter]);
  return (
    <Stack>
      <Group justify="space-between">
        <Title order={2}>Experiments in {project.name}</Title>
        <Group gap="sm">
          <SaveViewButton page="experiments" />
          {canWrite && (
            <Button component={Link} to="/experiments/new" data-testid="new-experiment">
              New experiment
            </Button>
          )}
        </Group>
      </Group>
      <Group gap="sm" align="flex-end">
        <TextInput
          label="Search"
          placeholder="name, #id, tag or author"
          value={filter.search}
          onChange={(e) => setView({ ...view, query: e.currentTarget.value })}
          w={260}
          data-testid="experiments-search"
        />
        <Select
          label="Kind"
          placeholder="any"
          clearable
          data={kinds}
          value={filter.kind}
          onChange={(kind) => setNarrow({ ...narrow, kind })}
          w={180}
        />
        <Select
          label="Has runs"
          placeholder="any status"
          clearable
          data={[...RUN_STATUSES]}
          value={filter.status}
          onChange={(s) => setNarrow({ ...narrow, status: s && isRunStatus(s) ? s : null })}
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
