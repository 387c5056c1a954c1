// @vitest-environment jsdom
// The whole router (router.tsx) on a first page load, as the browser runs it: React Router warned "No
// `HydrateFallback` element provided to render during initial hydration" on every page load.
import { MantineProvider } from '@mantine/core';
import { QueryClientProvider } from '@tanstack/react-query';
import { act } from 'react';
import { createRoot } from 'react-dom/client';
import { RouterProvider } from 'react-router';
import { describe, expect, it, vi } from 'vitest';
import { makeQueryClient } from './api/queryClient';
import { makeRouter } from './router';
import { testContainer } from './test/dom';

(globalThis as { IS_REACT_ACT_ENVIRONMENT?: boolean }).IS_REACT_ACT_ENVIRONMENT = true;

const dom = testContainer(() => localStorage.clear());

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('a first page load', () => {
  it('renders the page and React Router warns nothing about a missing HydrateFallback', async () => {
    const warnings: string[] = [];
    const record = (...args: unknown[]) => void warnings.push(args.map(String).join(' '));
    vi.spyOn(console, 'warn').mockImplementation(record);
    vi.spyOn(console, 'error').mockImplementation(record);
    window.history.replaceState(null, '', '/activity'); // a signed-in page, opened signed out
    const router = makeRouter(makeQueryClient());
    await act(async () => {
      dom.root = createRoot(dom.element);
      dom.root.render(
        <MantineProvider env="test">
          <QueryClientProvider client={makeQueryClient()}>
            <RouterProvider router={router} />
          </QueryClientProvider>
        </MantineProvider>,
      );
    });
    for (let i = 0; i < 100 && !/Sign in/.test(dom.element.textContent ?? ''); i++) {
      await act(() => sleep(50));
    }
    expect(dom.element.textContent).toMatch(/Sign in/); // the layout sent the signed-out visitor to /login
    expect(warnings.filter((w) => /HydrateFallback/.test(w))).toEqual([]);
  });
});
