// "Save view": saves what the page's URL holds (its query, columns, grouping, sort, chart: lib/viewState.ts)
// as a named view of the current project, shared with its members. Any page that keeps its state in the
// URL contract puts one in its header with its page name. Viewers do not get the button (the API refuses
// them anyway).
import { Anchor, Button, Group, Modal, Text } from '@mantine/core';
import { useState } from 'react';
import { Link } from 'react-router';
import type { SavedView } from '../../api/types';
import { useCanWrite, useCurrentProject } from '../../hooks/projects';
import { useSaveView, useUrlViewState } from '../../hooks/views';
import { savedViewPath, type ViewPage } from '../../lib/viewState';
import { ViewNameForm } from './ViewNameForm';

export function SaveViewButton({ page }: { page: ViewPage }) {
  const project = useCurrentProject();
  const canWrite = useCanWrite(project.id);
  const [state] = useUrlViewState();
  const [opened, setOpened] = useState(false);
  const [saved, setSaved] = useState<SavedView | null>(null);
  if (!canWrite || project.id === undefined) return null;
  return (
    <Group gap="xs">
      <Button variant="light" onClick={() => setOpened(true)} data-testid="save-view">
        Save view
      </Button>
      {saved && (
        <Text size="sm" data-testid="view-saved">
          Saved as{' '}
          <Anchor component={Link} to={savedViewPath(saved.id)}>
            {saved.name}
          </Anchor>
        </Text>
      )}
      {opened && (
        <SaveViewModal
          projectId={project.id}
          onClose={() => setOpened(false)}
          onSaved={(view) => {
            setSaved(view);
            setOpened(false);
          }}
          page={page}
          state={state}
        />
      )}
    </Group>
  );
}

interface ModalProps {
  projectId: number;
  page: ViewPage;
  state: ReturnType<typeof useUrlViewState>[0];
  onClose: () => void;
  onSaved: (view: SavedView) => void;
}

function SaveViewModal({ projectId, page, state, onClose, onSaved }: ModalProps) {
  const save = useSaveView(projectId);
  return (
    <Modal opened onClose={onClose} title="Save this view" centered>
      <ViewNameForm
        initial=""
        submitLabel="Save"
        pending={save.isPending}
        error={save.error}
        onCancel={onClose}
        onSubmit={(name) => save.mutate({ name, page, state }, { onSuccess: onSaved })}
      />
    </Modal>
  );
}
