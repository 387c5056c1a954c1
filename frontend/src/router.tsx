import { createBrowserRouter } from 'react-router';
import { AppLayout } from './components/layout/AppLayout';
import { LoginPage } from './routes/LoginPage';

// One chunk per page (issue 12): the entry holds the layout and the login page; a page's code, ECharts
// and the form and table code come with the first visit to a page that uses them, fetched in parallel
// with the page's first API requests instead of parsed before them.
export const router = createBrowserRouter([
  { path: '/login', element: <LoginPage /> },
  {
    element: <AppLayout />,
    children: [
      { index: true, lazy: async () => ({ Component: (await import('./routes/ExperimentsPage')).ExperimentsPage }) },
      { path: 'experiments/new', lazy: async () => ({ Component: (await import('./routes/NewExperimentPage')).NewExperimentPage }) },
      { path: 'experiments/:id', lazy: async () => ({ Component: (await import('./routes/ExperimentPage')).ExperimentPage }) },
      { path: 'runs/:id', lazy: async () => ({ Component: (await import('./routes/RunPage')).RunPage }) },
      { path: 'compare', lazy: async () => ({ Component: (await import('./routes/ComparePage')).ComparePage }) },
      { path: 'activity', lazy: async () => ({ Component: (await import('./routes/ActivityPage')).ActivityPage }) },
      { path: '*', lazy: async () => ({ Component: (await import('./routes/NotFoundPage')).NotFoundPage }) },
    ],
  },
]);
