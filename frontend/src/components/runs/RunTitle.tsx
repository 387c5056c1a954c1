// The run page's title: the run's name (a member gave it, PATCH /runs/{id}) or "Run <id>", and for those
// who may write, an inline rename: the pencil opens a text box, Enter or Save keeps the name, Escape
// leaves it, an empty box clears it. A refused name (422) is said under the box.
import { ActionIcon, Button, Group, Text, TextInput, Title } from '@mantine/core';
import { useState } from 'react';
import { errorMessage } from '../../api/errors';
import type { Run } from '../../api/types';
import { useRenameRun } from '../../hooks/runs';

/** runs.name is String(200) (migration 0012); the API refuses a longer one with a 422. */
export const MAX_RUN_NAME = 200;

export function RunTitle({ run, canWrite }: { run: Pick<Run, 'id' | 'name'>; canWrite: boolean }) {
  const [draft, setDraft] = useState<string | null>(null);
  const rename = useRenameRun(run.id);
  const save = () => {
    if (draft === null) return;
    rename.mutate(draft, { onSuccess: () => setDraft(null) });
  };
  if (draft !== null)
    return (
      <form
        onSubmit={(e) => {
          e.preventDefault();
          save();
        }}
      >
        <Group gap="xs" align="flex-start">
          <TextInput
            autoFocus
            w={360}
            value={draft}
            maxLength={MAX_RUN_NAME}
            placeholder={`Run ${run.id} (no name)`}
            aria-label="run name"
            data-testid="run-name-input"
            description="empty: no name"
            error={rename.isError ? errorMessage(rename.error) : undefined}
            onChange={(e) => setDraft(e.currentTarget.value)}
            onKeyDown={(e) => {
              if (e.key === 'Escape') {
                setDraft(null);
                rename.reset();
              }
            }}
          />
          <Button type="submit" size="sm" loading={rename.isPending} data-testid="run-name-save">
            Save
          </Button>
          <Button
            variant="default"
            size="sm"
            onClick={() => {
              setDraft(null);
              rename.reset();
            }}
          >
            Cancel
          </Button>
        </Group>
      </form>
    );
  return (
    <Group gap="xs" wrap="nowrap">
      <Title order={2} data-testid="run-title">
        {run.name ?? `Run ${run.id}`}
      </Title>
      {run.name && (
        <Text c="dimmed" size="lg">
          run {run.id}
        </Text>
      )}
      {canWrite && (
        <ActionIcon variant="subtle" size="sm" aria-label="rename the run" title="Rename" onClick={() => setDraft(run.name ?? '')} data-testid="rename-run">
          <svg width="14" height="14" viewBox="0 0 16 16" fill="none" stroke="currentColor" strokeWidth="1.6" aria-hidden>
            <path d="M11 2.5l2.5 2.5L5 13.5H2.5V11z" />
          </svg>
        </ActionIcon>
      )}
    </Group>
  );
}
