import { Button, Collapse, Group, Stack, Text, Title } from '@mantine/core';
import { useState } from 'react';
import { ClaimCard } from '../components/claims/ClaimCard';
import { ClaimForm } from '../components/claims/ClaimForm';
import { QueryState } from '../components/common/QueryState';
import { useClaims } from '../hooks/claims';
import { useCanWrite, useCurrentProject } from '../hooks/projects';

/** The project's claims: each a card evaluated on the runs now (asked for again every few seconds, so the
 *  cards change as runs end), and for members the form that states a new one. */
export function ClaimsPage() {
  const project = useCurrentProject();
  const claims = useClaims(project.id);
  const canWrite = useCanWrite(project.id);
  const [open, setOpen] = useState(false);
  return (
    <Stack>
      <Group justify="space-between">
        <Title order={2}>Claims in {project.name}</Title>
        {canWrite && (
          <Button variant={open ? 'subtle' : 'filled'} onClick={() => setOpen((v) => !v)} data-testid="new-claim">
            {open ? 'Close' : 'New claim'}
          </Button>
        )}
      </Group>
      <Text size="sm" c="dimmed">
        A claim compares arms of runs on a metric with a stated direction and smallest effect, tested with Holm's correction over its
        family. Lock a claim before its runs start to pre-register it.
      </Text>
      {project.id !== undefined && (
        <Collapse in={open}>
          <ClaimForm projectId={project.id} onDone={() => setOpen(false)} />
        </Collapse>
      )}
      <QueryState isPending={claims.isPending && project.id !== undefined} error={claims.error}>
        {() => (
          <Stack data-testid="claims">
            {(claims.data ?? []).map((c) => (
              <ClaimCard key={c.id} claim={c} projectId={project.id!} />
            ))}
          </Stack>
        )}
      </QueryState>
      {claims.data?.length === 0 && <Text c="dimmed">No claims yet.</Text>}
    </Stack>
  );
}
