// A run's artifacts tab: checkpoints, outputs and the final model as a folder tree with sizes, the total,
// and a download link per file (streamed by the browser straight to disk, with a one-run ticket).
import { ActionIcon, Badge, Button, Group, Table, Text, Tooltip } from '@mantine/core';
import { useMutation, useQuery } from '@tanstack/react-query';
import { useMemo, useState } from 'react';
import { api, unwrap } from '../../api/client';
import type { Ok } from '../../api/types';
import { artifactRows, artifactUrl, formatBytes, type ArtifactRow } from '../../lib/artifactTree';
import { QueryState } from '../common/QueryState';
import { timeAgo } from '../common/time';
import { formatCount } from '../../lib/plainFormat';

type ArtifactList = Ok<'artifacts-list'>;

/** How often the list is refreshed while the run is unfinished (checkpoints come and go). */
const LIVE_REFRESH_MS = 10_000;
const INDENT_PX = 18;
const KIND_COLOR = { checkpoint: 'blue', output: 'gray', model: 'green' } as const;

function useRunArtifacts(runId: number, live: boolean) {
  return useQuery({
    queryKey: ['runs', runId, 'artifacts'],
    queryFn: (): Promise<ArtifactList> =>
      unwrap(api.GET('/api/v1/runs/{run_id}/artifacts', { params: { path: { run_id: runId } } })),
    refetchInterval: live ? LIVE_REFRESH_MS : false,
  });
}

/** Fetches a one-minute run read ticket, then lets the browser download the file from a plain link. */
function useDownload(runId: number) {
  return useMutation({
    mutationFn: async (path: string) => {
      const { ticket } = await unwrap(
        api.POST('/api/v1/runs/{run_id}/read-ticket', { params: { path: { run_id: runId } } }),
      );
      const link = document.createElement('a');
      link.href = artifactUrl(runId, path, ticket);
      link.download = path.split('/').pop() ?? 'artifact';
      document.body.appendChild(link);
      link.click();
      link.remove();
    },
  });
}

function Row({ row, collapsed, toggle, download }: {
  row: ArtifactRow;
  collapsed: boolean;
  toggle: (path: string) => void;
  download: (path: string) => void;
}) {
  const pad = { paddingLeft: row.depth * INDENT_PX };
  if (row.type === 'folder') {
    return (
      <Table.Tr data-testid="artifact-folder" data-path={row.path}>
        <Table.Td>
          <Group gap={6} wrap="nowrap" style={pad}>
            <ActionIcon variant="subtle" size="sm" onClick={() => toggle(row.path)} aria-label={`${collapsed ? 'expand' : 'collapse'} ${row.path}`}>
              {collapsed ? '▸' : '▾'}
            </ActionIcon>
            <Text fw={600} size="sm">{row.name}/</Text>
            <Text c="dimmed" size="xs">{row.files} {row.files === 1 ? 'file' : 'files'}</Text>
          </Group>
        </Table.Td>
        <Table.Td />
        <Table.Td ta="right"><Text size="sm" fw={600}>{formatBytes(row.size)}</Text></Table.Td>
        <Table.Td />
        <Table.Td />
      </Table.Tr>
    );
  }
  return (
    <Table.Tr data-testid="artifact-file" data-path={row.path}>
      <Table.Td>
        <Text size="sm" style={{ paddingLeft: row.depth * INDENT_PX + 30 }} ff="monospace">{row.name}</Text>
      </Table.Td>
      <Table.Td><Badge size="xs" variant="light" color={KIND_COLOR[row.file.kind]}>{row.file.kind}</Badge></Table.Td>
      <Table.Td ta="right"><Text size="sm" data-testid="artifact-size">{formatBytes(row.size)}</Text></Table.Td>
      <Table.Td><Text size="xs" c="dimmed">{timeAgo(row.file.modified)}</Text></Table.Td>
      <Table.Td>
        <Tooltip label={`${formatCount(row.size)} bytes`}>
          <Button size="compact-xs" variant="light" onClick={() => download(row.path)} aria-label={`download ${row.path}`}>
            Download
          </Button>
        </Tooltip>
      </Table.Td>
    </Table.Tr>
  );
}

export function RunArtifacts({ runId, live }: { runId: number; live: boolean }) {
  const artifacts = useRunArtifacts(runId, live);
  const download = useDownload(runId);
  const [collapsed, setCollapsed] = useState<ReadonlySet<string>>(new Set());
  const rows = useMemo(() => artifactRows(artifacts.data?.items ?? [], collapsed), [artifacts.data, collapsed]);
  const toggle = (path: string) =>
    setCollapsed((old) => {
      const next = new Set(old);
      if (next.has(path)) next.delete(path);
      else next.add(path);
      return next;
    });
  return (
    <QueryState isPending={artifacts.isPending} error={artifacts.error}>
      {() =>
        artifacts.data!.count === 0 ? (
          <Text c="dimmed">No artifacts{live ? ' yet: checkpoints appear as the run writes them' : ''}.</Text>
        ) : (
          <>
            <Text size="sm" mb="xs" data-testid="artifacts-total">
              {artifacts.data!.count} {artifacts.data!.count === 1 ? 'file' : 'files'}, {formatBytes(artifacts.data!.total_size)} in all
            </Text>
            <Table striped highlightOnHover verticalSpacing={4} data-testid="artifacts">
              <Table.Thead>
                <Table.Tr>
                  <Table.Th>Path</Table.Th>
                  <Table.Th>Kind</Table.Th>
                  <Table.Th ta="right">Size</Table.Th>
                  <Table.Th>Modified</Table.Th>
                  <Table.Th />
                </Table.Tr>
              </Table.Thead>
              <Table.Tbody>
                {rows.map((row) => (
                  <Row key={row.path} row={row} collapsed={collapsed.has(row.path)} toggle={toggle} download={download.mutate} />
                ))}
              </Table.Tbody>
            </Table>
          </>
        )
      }
    </QueryState>
  );
}
