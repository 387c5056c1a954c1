// The sidebar's saved views: the current project's views by name, each a link to `/views/<id>` (which
// opens its page with its state in the URL); its author or a project admin renames or deletes it here.
import { ActionIcon, Anchor, Button, Group, Menu, Modal, Stack, Text, Title } from '@mantine/core';
import { useState } from 'react';
import { NavLink } from 'react-router';
import { errorMessage } from '../../api/errors';
import type { SavedView } from '../../api/types';
import { useCurrentProject } from '../../hooks/projects';
import { useDeleteView, useRenameView, useSavedViews } from '../../hooks/views';
import { savedViewPath } from '../../lib/viewState';
import { ViewNameForm } from '../views/ViewNameForm';

export function SavedViewsNav() {
  const project = useCurrentProject();
  const views = useSavedViews(project.id);
  const [renaming, setRenaming] = useState<SavedView | null>(null);
  const [deleting, setDeleting] = useState<SavedView | null>(null);
  return (
    <nav aria-label="Saved views">
      <Stack gap={4}>
        <Title order={6} c="dimmed">
          Saved views
        </Title>
        {views.data?.length === 0 && (
          <Text size="xs" c="dimmed">
            None yet: “Save view” on a page saves what it shows.
          </Text>
        )}
        {views.error && (
          <Text size="xs" c="red">
            {errorMessage(views.error)}
          </Text>
        )}
        {views.data?.map((v) => (
          <Group key={v.id} gap={4} wrap="nowrap" justify="space-between" data-view-id={v.id}>
            <Anchor component={NavLink} to={savedViewPath(v.id)} size="sm" truncate="end" title={`${v.name} (${v.page}, by ${v.author ?? 'a deleted user'})`}>
              {v.name}
            </Anchor>
            {v.can_edit && (
              <Menu position="bottom-end" withinPortal>
                <Menu.Target>
                  <ActionIcon variant="subtle" size="sm" aria-label={`Actions for view ${v.name}`}>
                    ⋯
                  </ActionIcon>
                </Menu.Target>
                <Menu.Dropdown>
                  <Menu.Item onClick={() => setRenaming(v)}>Rename</Menu.Item>
                  <Menu.Item color="red" onClick={() => setDeleting(v)}>
                    Delete
                  </Menu.Item>
                </Menu.Dropdown>
              </Menu>
            )}
          </Group>
        ))}
      </Stack>
      {renaming && project.id !== undefined && <RenameModal projectId={project.id} view={renaming} onClose={() => setRenaming(null)} />}
      {deleting && project.id !== undefined && <DeleteModal projectId={project.id} view={deleting} onClose={() => setDeleting(null)} />}
    </nav>
  );
}

function RenameModal({ projectId, view, onClose }: { projectId: number; view: SavedView; onClose: () => void }) {
  const rename = useRenameView(projectId);
  return (
    <Modal opened onClose={onClose} title={`Rename view ${view.name}`} centered>
      <ViewNameForm
        initial={view.name}
        submitLabel="Rename"
        pending={rename.isPending}
        error={rename.error}
        onCancel={onClose}
        onSubmit={(name) => rename.mutate({ id: view.id, name }, { onSuccess: onClose })}
      />
    </Modal>
  );
}

function DeleteModal({ projectId, view, onClose }: { projectId: number; view: SavedView; onClose: () => void }) {
  const remove = useDeleteView(projectId);
  return (
    <Modal opened onClose={onClose} title={`Delete view ${view.name}?`} centered>
      <Stack gap="sm">
        <Text size="sm">Every member of the project loses it; links to it stop working.</Text>
        {remove.error && (
          <Text size="sm" c="red" role="alert">
            {errorMessage(remove.error)}
          </Text>
        )}
        <Group justify="flex-end" gap="sm">
          <Button variant="default" onClick={onClose}>
            Cancel
          </Button>
          <Button color="red" loading={remove.isPending} onClick={() => remove.mutate(view.id, { onSuccess: onClose })} data-testid="view-delete-confirm">
            Delete
          </Button>
        </Group>
      </Stack>
    </Modal>
  );
}
