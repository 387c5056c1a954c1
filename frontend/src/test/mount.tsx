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

/** Polls `ready` every 10 ms inside act() until it returns something truthy (at most 2 s). */
export async function until<T>(ready: () => T): Promise<NonNullable<T>> {
  for (let i = 0; i < 200; i++) {
    const got = ready();
    if (got) return got as NonNullable<T>;
    await act(() => new Promise((r) => setTimeout(r, 10)));
  }
  throw new Error(`not ready: ${ready}`);
}
