// The confirm dialog of a Delete (a project settings section's secrets and datasets, a claim's card): the
// delete mutation and what it deletes, the message, and the API's refusal shown in the dialog; closing
// resets the mutation.
import { Alert, Button, Group, Modal, Stack, Text } from '@mantine/core';
import type { UseMutationResult } from '@tanstack/react-query';
import type { ReactNode } from 'react';
import { errorMessage } from '../../api/errors';

/** Asks "Delete {what} {name}?" and runs `del` on `target` (a secret's or dataset's name, a claim's id).
 *  `testid`, when given, names the confirm button `${testid}-delete-confirm` and the refusal
 *  `${testid}-delete-error` (a claim's `claim-${id}`); else they are `confirm-delete-${what}` and
 *  `${what}-delete-error`. */
export function ConfirmDelete<V>({
  what,
  name,
  target,
  opened,
  onClose,
  del,
  testid,
  children,
}: {
  what: string;
  name: string;
  target: V;
  opened: boolean;
  onClose: () => void;
  del: UseMutationResult<unknown, unknown, V>;
  testid?: string;
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
          <Alert color="red" role="alert" data-testid={testid ? `${testid}-delete-error` : `${what}-delete-error`}>
            {errorMessage(del.error)}
          </Alert>
        )}
        <Group justify="flex-end" gap="sm">
          <Button variant="default" onClick={close}>
            Cancel
          </Button>
          <Button
            color="red"
            loading={del.isPending}
            data-testid={testid ? `${testid}-delete-confirm` : `confirm-delete-${what}`}
            onClick={() => del.mutate(target, { onSuccess: close })}
          >
            Delete
          </Button>
        </Group>
      </Stack>
    </Modal>
  );
}
