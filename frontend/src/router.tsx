import type { QueryClient } from '@tanstack/react-query';
import { createBrowserRouter, Navigate, useLocation, type LoaderFunctionArgs, type ShouldRevalidateFunctionArgs } from 'react-router';
import { authStore } from './api/auth';
import { AppLayout } from './components/layout/AppLayout';
import { PageLoading } from './components/layout/PageLoading';
import { earlyKey, takeEarlyOr } from './early';
import { experimentQuery, runsTableQuery } from './hooks/experiments';
import { metricKeysQuery, metricsQuery } from './hooks/metrics';
import { projectsQuery } from './hooks/projects';
import { runResultsQuery } from './hooks/results';
import { runQuery } from './hooks/runs';
import { serverQuery } from './hooks/server';
import { LoginPage } from './routes/LoginPage';

/** `/` opens the experiments list at its own address, with the query it was given. */
function ToExperiments() {
  const { search } = useLocation();
  return <Navigate to={{ pathname: '/experiments', search }} replace />;
}

// One chunk per page: the entry holds the layout and the login page; a page's code, the chart libraries
// and the form and table code come with the first visit to a page that uses them.
//
// The run and experiment pages' first requests do not wait for their code: their loaders (run while the
// page's chunk loads) start them into the query cache (and, for the run page, the download of uPlot, which
// draws its metric charts). The run page's charts' series follow its keys at once: each chart's first
// request (the whole run, by step, as a chart starts) goes out when the keys arrive, not after the page and
// its charts have rendered.
//
// On the page the browser opened, src/early.ts started those requests before this code had arrived: a
// query takes its early answer once (`early`), or asks the API when there is none or it failed.
//
// What a page shows beside its own data is asked for with it, not by the components once they have
// rendered: the layout's projects and the server's settings on every signed-in page, a run's results and
// its experiment's name on the run page. Asked for from the components, they went out only after the
// page's first render and their answers rendered the page again, after the first chart was drawn and
// before the browser's next frame (~0.1 s of a run page's load on a slow machine).
function early<T, K>(query: { queryKey: K; queryFn: () => Promise<T> }, key: string) {
  return { ...query, queryFn: () => takeEarlyOr(key, query.queryFn) };
}

export function prefetchRun(queryClient: QueryClient) {
  return ({ params }: LoaderFunctionArgs) => {
    const id = Number(params.id);
    if (Number.isInteger(id) && id > 0) {
      void queryClient
        .fetchQuery(early(runQuery(id), earlyKey.run(id)))
        .then((run) => queryClient.prefetchQuery(experimentQuery(run.experiment_id)))
        .catch(() => undefined); // the page's own query shows the error
      void queryClient.prefetchQuery(runResultsQuery(id));
      void queryClient
        .fetchQuery(early(metricKeysQuery(id), earlyKey.metricKeys(id)))
        .then((keys) =>
          keys.forEach((key) => void queryClient.prefetchQuery(early(metricsQuery(id, [key]), earlyKey.metrics(id, key)))),
        )
        .catch(() => undefined); // the page's own query shows the error
      void import('./components/charts/uplot');
    }
    return null;
  };
}

/** The experiment page's two requests (the experiment, its runs as columns), likewise. */
function prefetchExperiment(queryClient: QueryClient) {
  return ({ params }: LoaderFunctionArgs) => {
    const id = Number(params.id);
    if (Number.isInteger(id) && id > 0) {
      void queryClient.prefetchQuery(early(experimentQuery(id), earlyKey.experiment(id)));
      void queryClient.prefetchQuery(early(runsTableQuery(id), earlyKey.runsTable(id)));
    }
    return null;
  };
}

/** The signed-in layout's data, asked for with every page's own (the layout redirects when signed out). */
export function prefetchLayout(queryClient: QueryClient) {
  return () => {
    if (authStore.token()) {
      void queryClient.prefetchQuery(projectsQuery());
      void queryClient.prefetchQuery(serverQuery());
    }
    return null;
  };
}

/**
 * The loaders above prefetch what a page's address names (its path); a change of the search params alone
 * (a run page's tab or chart options, a list's query, a view's state) is the same page showing something
 * else: it does not run them again. Run again, the run page's loader asked for each of its charts' series
 * once more (53 requests on a SRAVEN run) at every tab switch, and the navigation waited for the loaders,
 * so a chart option's switch turned only after it.
 */
export const samePageKeepsLoaders = ({ currentUrl, nextUrl, defaultShouldRevalidate }: ShouldRevalidateFunctionArgs): boolean =>
  currentUrl.pathname === nextUrl.pathname ? false : defaultShouldRevalidate;

export function makeRouter(queryClient: QueryClient) {
  return createBrowserRouter([
    { path: '/login', element: <LoginPage /> },
    // a share link's page: for a reader without an account, outside the signed-in layout
    { path: '/shared/reports/:token', lazy: async () => ({ Component: (await import('./routes/SharedReportPage')).SharedReportPage }) },
    {
      element: <AppLayout />,
      loader: prefetchLayout(queryClient),
      shouldRevalidate: samePageKeepsLoaders,
      // the first load of a page waits for its loader and its code: a spinner meanwhile (none: a blank
      // page and React Router's "No `HydrateFallback` element provided" warning on every page load)
      HydrateFallback: PageLoading,
      children: [
        // the experiments list lives at /experiments (beside /runs); / is an old address of it, kept by a
        // redirect that keeps its query (links and saved bookmarks of /?q=... still open the same list)
        { index: true, Component: ToExperiments },
        { path: 'experiments', lazy: async () => ({ Component: (await import('./routes/ExperimentsPage')).ExperimentsPage }) },
        { path: 'experiments/new', lazy: async () => ({ Component: (await import('./routes/NewExperimentPage')).NewExperimentPage }) },
        { path: 'experiments/:id', loader: prefetchExperiment(queryClient), shouldRevalidate: samePageKeepsLoaders, lazy: async () => ({ Component: (await import('./routes/ExperimentPage')).ExperimentPage }) },
        { path: 'runs', lazy: async () => ({ Component: (await import('./routes/RunsPage')).RunsPage }) },
        { path: 'runs/:id', loader: prefetchRun(queryClient), shouldRevalidate: samePageKeepsLoaders, lazy: async () => ({ Component: (await import('./routes/RunPage')).RunPage }) },
        { path: 'compare', lazy: async () => ({ Component: (await import('./routes/ComparePage')).ComparePage }) },
        { path: 'claims', lazy: async () => ({ Component: (await import('./routes/ClaimsPage')).ClaimsPage }) },
        { path: 'activity', lazy: async () => ({ Component: (await import('./routes/ActivityPage')).ActivityPage }) },
        { path: 'reports', lazy: async () => ({ Component: (await import('./routes/ReportsPage')).ReportsPage }) },
        { path: 'reports/:id', lazy: async () => ({ Component: (await import('./routes/ReportPage')).ReportPage }) },
        { path: 'reports/:id/revisions/:number', lazy: async () => ({ Component: (await import('./routes/ReportRevisionPage')).ReportRevisionPage }) },
        { path: 'views/:id', lazy: async () => ({ Component: (await import('./routes/SavedViewPage')).SavedViewPage }) },
        { path: 'settings/:tab?', lazy: async () => ({ Component: (await import('./routes/ProjectSettingsPage')).ProjectSettingsPage }) },
        { path: '*', lazy: async () => ({ Component: (await import('./routes/NotFoundPage')).NotFoundPage }) },
      ],
    },
  ]);
}
