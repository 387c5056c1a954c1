// A project's reports: open one, or start a new one from scratch (members).
import { Anchor, Button, Group, Stack, Table, Text, TextInput, Title } from '@mantine/core';
import { useState } from 'react';
import { Link, useNavigate } from 'react-router';
import { errorMessage } from '../api/errors';
import { QueryState } from '../components/common/QueryState';
import { timeAgo } from '../components/common/time';
import { useCurrentProject } from '../hooks/projects';
import { useCreateReport, useReports } from '../hooks/reports';

export function ReportsPage() {
  const project = useCurrentProject();
  const reports = useReports(project.id);
  const create = useCreateReport(project.id ?? 0);
  const navigate = useNavigate();
  const [title, setTitle] = useState('');
  return (
    <Stack>
      <Title order={2}>Reports in {project.name}</Title>
      <form
        onSubmit={(e) => {
          e.preventDefault();
          if (title.trim()) create.mutate(title.trim(), { onSuccess: (r) => void navigate(`/reports/${r.id}`) });
        }}
      >
        <Group align="flex-end">
          <TextInput label="New report" placeholder="Title" value={title} onChange={(e) => setTitle(e.currentTarget.value)} error={create.error ? errorMessage(create.error) : undefined} />
          <Button type="submit" disabled={!title.trim() || project.id === undefined} loading={create.isPending}>
            Create
          </Button>
        </Group>
      </form>
      <QueryState isPending={reports.isPending && project.id !== undefined} error={reports.error}>
        {() =>
          reports.data?.length ? (
            <Table data-testid="reports">
              <Table.Thead>
                <Table.Tr>
                  <Table.Th>Title</Table.Th>
                  <Table.Th>Author</Table.Th>
                  <Table.Th>Revisions</Table.Th>
                  <Table.Th>Updated</Table.Th>
                </Table.Tr>
              </Table.Thead>
              <Table.Tbody>
                {reports.data.map((r) => (
                  <Table.Tr key={r.id}>
                    <Table.Td>
                      <Anchor component={Link} to={`/reports/${r.id}`}>{r.title}</Anchor>
                    </Table.Td>
                    <Table.Td>{r.author}</Table.Td>
                    <Table.Td>{r.revisions}</Table.Td>
                    <Table.Td>{timeAgo(r.updated_at)}</Table.Td>
                  </Table.Tr>
                ))}
              </Table.Tbody>
            </Table>
          ) : (
            <Text c="dimmed">No reports yet.</Text>
          )
        }
      </QueryState>
    </Stack>
  );
}
