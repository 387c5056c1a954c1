// One QueryClient with the one place errors are reported: a failed query or mutation shows a
// notification, except 401 (the session ends and the login page says so) and mutations that show their
// errors on a form (meta.formErrors: the 422 lands on the fields; meta.errorsInline: the component shows
// every 4xx the API answers, as the secrets form does with its 422s and 403s).
import { notifications } from '@mantine/notifications';
import { MutationCache, QueryCache, QueryClient } from '@tanstack/react-query';
import { errorMessage, isApiError } from './errors';

declare module '@tanstack/react-query' {
  interface Register {
    mutationMeta: { formErrors?: boolean; errorsInline?: boolean };
    /** errorsInline: the page shows the query's 4xx itself (a search box's 422 under the box) */
    queryMeta: { errorsInline?: boolean };
  }
}

function report(error: unknown, title: string) {
  if (isApiError(error, 401)) return;
  const message = errorMessage(error);
  // one page often asks several things of one missing resource (a run and its metric keys): the same
  // error is shown once, not once per request (Mantine ignores a second notification with the same id)
  notifications.show({ id: `error:${title}:${message}`, color: 'red', title, message, autoClose: 8000 });
}

export function makeQueryClient(): QueryClient {
  return new QueryClient({
    queryCache: new QueryCache({
      onError: (error, query) => {
        if (query.meta?.errorsInline && isApiError(error) && error.status < 500) return;
        report(error, 'Could not load');
      },
    }),
    mutationCache: new MutationCache({
      onError: (error, _vars, _ctx, mutation) => {
        if (mutation.meta?.formErrors && isApiError(error, 422)) return;
        if (mutation.meta?.errorsInline && isApiError(error) && error.status < 500) return;
        report(error, 'Action failed');
      },
    }),
    defaultOptions: {
      queries: {
        staleTime: 10_000,
        refetchOnWindowFocus: false,
        // client errors are answers, not glitches: retry only network and server errors
        retry: (count, error) => !(isApiError(error) && error.status < 500) && count < 2,
      },
    },
  });
}
