// The confirm dialog of a project settings section's Delete (secrets, datasets): the section's delete
// mutation, its message, and the API's refusal shown in the dialog; closing resets the mutation.
import { Alert, Button, Group, Modal, Stack, Text } from '@mantine/core';
import type { UseMutationResult } from '@tanstack/react-query';
import type { ReactNode } from 'react';
import { errorMessage } from '../../api/errors';

export function ConfirmDelete({
  what,
  name,
  opened,
  onClose,
  del,
  children,
}: {
  what: 'secret' | 'dataset';
  name: string;
  opened: boolean;
  onClose: () => void;
  del: UseMutationResult<unknown, unknown, string>;
  children: ReactNode;
}) {
  const close = () => {
    del.reset();
    onClose();
  };
  return (
    <Modal opened={opened} onClose={close} title={`Delete ${what} ${name}?`} centered>
      <Stack gap="sm">
        <Text size="sm">{children}</Text>
        {del.error != null && (
          <Alert color="red" role="alert" data-testid={`${what}-delete-error`}>
            {errorMessage(del.error)}
          </Alert>
        )}
        <Group justify="flex-end" gap="sm">
          <Button variant="default" onClick={close}>
            Cancel
          </Button>
          <Button color="red" loading={del.isPending} data-testid={`confirm-delete-${what}`} onClick={() => del.mutate(name, { onSuccess: close })}>
            Delete
          </Button>
        </Group>
      </Stack>
    </Modal>
  );
}
