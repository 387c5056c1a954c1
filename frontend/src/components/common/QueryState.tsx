// Loading and error states of a page's main query, shown the same way everywhere.
import { Alert, Center, Loader } from '@mantine/core';
import type { ReactNode } from 'react';
import { errorMessage, isApiError } from '../../api/errors';

export function QueryState({ isPending, error, children }: { isPending: boolean; error: unknown; children: () => ReactNode }) {
  if (error) {
    return (
      <Alert color={isApiError(error, 404) ? 'gray' : 'red'} title={isApiError(error, 404) ? 'Not found' : 'Could not load'}>
        {errorMessage(error)}
      </Alert>
    );
  }
  if (isPending)
    return (
      <Center p="xl">
        <Loader />
      </Center>
    );
  return <>{children()}</>;
}
