// One way to mount a routed page in a component test: Mantine, the query client, an optional current
// project and a memory router, rendered inside act(); and `until`, which waits (in act) for the page to
// reach a state. The route tests (runs, compare, experiments, saved views) share these.
import { MantineProvider } from '@mantine/core';
import { QueryClientProvider, type QueryClient } from '@tanstack/react-query';
import { act } from 'react';
import { createRoot, type Root } from 'react-dom/client';
import { RouterProvider, type createMemoryRouter } from 'react-router';
import { ProjectContext, type CurrentProject } from '../hooks/projects';

export async function mountRouter(
  container: HTMLElement,
  router: ReturnType<typeof createMemoryRouter>,
  qc: QueryClient,
  project?: CurrentProject,
): Promise<Root> {
  const root = createRoot(container);
  const routed = <RouterProvider router={router} />;
  await act(async () => {
    root.render(
      <MantineProvider env="test">
        <QueryClientProvider client={qc}>
          {project ? <ProjectContext.Provider value={project}>{routed}</ProjectContext.Provider> : routed}
        </QueryClientProvider>
      </MantineProvider>,
    );
  });
  return root;
}

/**
 * Polls `ready` every 10 ms inside act() until it returns something truthy: a wait on a condition, ended by
 * it, with a deadline of UNTIL_MS of wall time (generous: `make test` runs vitest beside pytest's processes
 * on two cores, where a page that renders in 50 ms alone can take seconds).
 */
export const UNTIL_MS = 15_000;
export async function until<T>(ready: () => T, ms = UNTIL_MS): Promise<NonNullable<T>> {
  const deadline = Date.now() + ms;
  for (;;) {
    const got = ready();
    if (got) return got as NonNullable<T>;
    if (Date.now() > deadline) throw new Error(`not ready after ${ms} ms: ${ready}`);
    await act(() => new Promise((r) => setTimeout(r, 10)));
  }
}

/**
 * Waits until the query client has nothing in flight and React has drawn what the last answers hold. An
 * answer lands in the cache before its observers hear of it (the query client tells them on a later
 * task), so a wait on the cache alone (`until`) can end before the page shows the data: after it, one
 * more task runs inside act() (the client's notification, then React's render), and the wait goes on if
 * that render started another query.
 */
export async function settled(qc: QueryClient, ms = UNTIL_MS): Promise<void> {
  const deadline = Date.now() + ms;
  do {
    await until(() => qc.isFetching() === 0, Math.max(0, deadline - Date.now()));
    await act(() => new Promise((r) => setTimeout(r, 0)));
  } while (qc.isFetching() !== 0);
}
