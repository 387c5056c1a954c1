import '@mantine/core/styles.css';
import '@mantine/notifications/styles.css';
import { createTheme, MantineProvider } from '@mantine/core';
import { Notifications } from '@mantine/notifications';
import { QueryClientProvider } from '@tanstack/react-query';
import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
// react-router/dom's provider: a navigation may ask for `flushSync` (a chart option's switch shows its new
// state in the click that set it, hooks/views.ts useUrlChartOptions)
import { RouterProvider } from 'react-router/dom';
import { makeQueryClient } from './api/queryClient';
import { makeRouter } from './router';

const theme = createTheme({ primaryColor: 'blue', defaultRadius: 'sm' });
const queryClient = makeQueryClient();
const router = makeRouter(queryClient);

createRoot(document.getElementById('root')!).render(
  <StrictMode>
    <MantineProvider theme={theme}>
      <Notifications position="top-right" />
      <QueryClientProvider client={queryClient}>
        <RouterProvider router={router} />
      </QueryClientProvider>
    </MantineProvider>
  </StrictMode>,
);
