import { createBrowserRouter } from 'react-router';
import { AppLayout } from './components/layout/AppLayout';
import { ActivityPage } from './routes/ActivityPage';
import { ComparePage } from './routes/ComparePage';
import { ExperimentPage } from './routes/ExperimentPage';
import { ExperimentsPage } from './routes/ExperimentsPage';
import { LoginPage } from './routes/LoginPage';
import { NewExperimentPage } from './routes/NewExperimentPage';
import { NotFoundPage } from './routes/NotFoundPage';
import { RunPage } from './routes/RunPage';

export const router = createBrowserRouter([
  { path: '/login', element: <LoginPage /> },
  {
    element: <AppLayout />,
    children: [
      { index: true, element: <ExperimentsPage /> },
      { path: 'experiments/new', element: <NewExperimentPage /> },
      { path: 'experiments/:id', element: <ExperimentPage /> },
      { path: 'runs/:id', element: <RunPage /> },
      { path: 'compare', element: <ComparePage /> },
      { path: 'activity', element: <ActivityPage /> },
      { path: '*', element: <NotFoundPage /> },
    ],
  },
]);
