// The name form of a saved view (saving one, renaming one): the API's answer lands on the name field
// (422 on body.name: length or characters; 409: the project has a view of that name), anything else
// above it.
import { Alert, Button, Group, Stack, TextInput } from '@mantine/core';
import { useState, type FormEvent } from 'react';
import { ApiError, errorMessage } from '../../api/errors';

export function viewNameError(error: unknown): { name?: string; form?: string } {
  if (!(error instanceof ApiError)) return { form: errorMessage(error) };
  if (error.status === 409) return { name: error.detail };
  if (error.status === 422) {
    const named = error.errors.filter((e) => e.loc[0] === 'body' && e.loc[1] === 'name').map((e) => e.msg);
    if (named.length) return { name: named.join('; ') };
  }
  return { form: error.detail };
}

interface Props {
  initial: string;
  submitLabel: string;
  pending: boolean;
  error: unknown;
  onSubmit: (name: string) => void;
  onCancel: () => void;
}

export function ViewNameForm({ initial, submitLabel, pending, error, onSubmit, onCancel }: Props) {
  const [name, setName] = useState(initial);
  const errors = error ? viewNameError(error) : {};
  const submit = (e: FormEvent) => {
    e.preventDefault();
    onSubmit(name.trim());
  };
  return (
    <form onSubmit={submit} aria-label="View name">
      <Stack gap="sm">
        {errors.form && (
          <Alert color="red" role="alert">
            {errors.form}
          </Alert>
        )}
        <TextInput
          label="Name"
          description="up to 100 letters, digits, spaces and . _ - : , = + ( ) < > /"
          value={name}
          onChange={(e) => setName(e.currentTarget.value)}
          error={errors.name}
          data-autofocus
          autoComplete="off"
          data-testid="view-name"
        />
        <Group justify="flex-end" gap="sm">
          <Button variant="default" onClick={onCancel}>
            Cancel
          </Button>
          <Button type="submit" loading={pending} disabled={!name.trim()} data-testid="view-name-submit">
            {submitLabel}
          </Button>
        </Group>
      </Stack>
    </form>
  );
}
