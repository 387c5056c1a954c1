import { Anchor, Button, Group, Stack, Table, Text, Title } from '@mantine/core';
import { useEffect, useMemo, useRef } from 'react';
import { Link } from 'react-router';
import { StatusCounts } from '../components/common/StatusChip';
import { timeAgo } from '../components/common/time';
import { ReviewBadge } from '../components/review/ReviewPanel';
import { ExternalBadge } from '../components/runs/ExternalBadge';
import { QueryBox, useDebouncedQuery } from '../components/runs/QueryBox';
import { SaveViewButton } from '../components/views/SaveViewButton';
import { useLastGood, useExperimentsPages } from '../hooks/projectRuns';
import { useCanWrite, useCurrentProject } from '../hooks/projects';
import { useUrlViewState } from '../hooks/views';
import { isExternal } from '../lib/external';

// The project's experiments, newest first, paged on the server: pages of 50 come as the list
// scrolls to its end (or with "Load more"), so every experiment is reachable. The search box is the query
// language's `q` (plain words: the name contains them; the kind, tags, author, runs and params are
// fields of the language), kept in the URL as the view's query
// (lib/viewState.ts): a saved view or a shared link opens the page searching for it.
export function ExperimentsPage() {
  const project = useCurrentProject();
  const canWrite = useCanWrite(project.id);
  const [view, setView] = useUrlViewState();
  const typed = useDebouncedQuery(view.query);
  const q = typed;
  const experiments = useExperimentsPages({ project: project.name, q });
  const good = useLastGood(experiments.isError ? undefined : experiments.data);
  const pages = experiments.isError ? good : experiments.data;
  const shown = useMemo(() => (pages?.pages ?? []).flatMap((p) => p.items), [pages]);

  const sentinel = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const el = sentinel.current;
    if (!el || typeof IntersectionObserver === 'undefined') return;
    const io = new IntersectionObserver((entries) => {
      if (entries.some((e) => e.isIntersecting) && experiments.hasNextPage && !experiments.isFetchingNextPage) void experiments.fetchNextPage();
    });
    io.observe(el);
    return () => io.disconnect();
  }, [experiments]);
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
      <Group gap="sm" align="flex-start">
        <QueryBox
          label="Search"
          placeholder='a name, or kind = "carma" and runs > 3'
          value={view.query}
          onChange={(query) => setView({ ...view, query })}
          error={experiments.error}
          sent={q}
          testId="experiments-search"
          example='kind = "carma" and runs > 3 and created > now - 7d'
          width={520}
        />
      </Group>
      {pages && (
        <Text size="sm" c="dimmed" data-testid="experiments-shown">
          {shown.length} shown{experiments.hasNextPage ? ', more on scroll' : ''}
        </Text>
      )}
      {!pages ? (
        <Text c="dimmed">{experiments.isError ? 'Could not load the experiments.' : 'Loading…'}</Text>
      ) : shown.length === 0 ? (
        <Text c="dimmed">{q ? 'No experiment matches.' : 'No experiments yet.'}</Text>
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
                <Table.Td>{isExternal(e.kind) ? <ExternalBadge kind={e.kind} /> : e.kind}</Table.Td>
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
      )}
      <div ref={sentinel} />
      {experiments.hasNextPage && (
        <Button variant="subtle" onClick={() => void experiments.fetchNextPage()} loading={experiments.isFetchingNextPage} data-testid="experiments-more">
          Load more
        </Button>
      )}
    </Stack>
  );
}
