// `/views/<id>`: a saved view's address. It reads the view by its id alone (the address names no project;
// the API answers for any project the caller is in), switches to the view's project, and replaces itself
// with the view's page carrying the view's state in the URL (lib/viewState.ts), so what the page shows
// from then on is the URL contract's, editable and shareable like any unsaved state.
import { Stack, Text, Title } from '@mantine/core';
import { useEffect, useState } from 'react';
import { useNavigate, useParams } from 'react-router';
import { errorMessage, isApiError } from '../api/errors';
import { PageLoading } from '../components/layout/PageLoading';
import { useCurrentProject, useProjects } from '../hooks/projects';
import { fetchSavedView } from '../hooks/views';
import { canonicalViewState, viewUrl } from '../lib/viewState';

export function SavedViewPage() {
  const { id } = useParams();
  const { name: currentName, setProject } = useCurrentProject();
  const projects = useProjects();
  const navigate = useNavigate();
  const [problem, setProblem] = useState<string | null>(null);
  const viewId = Number(id);
  const valid = Number.isInteger(viewId) && viewId > 0;
  const list = projects.data;

  useEffect(() => {
    if (!valid || !list) return;
    let cancelled = false;
    void (async () => {
      try {
        const view = await fetchSavedView(viewId);
        if (cancelled) return;
        const home = list.find((p) => p.id === view.project_id);
        if (!home) {
          setProblem(`view ${viewId} is in project ${view.project_id}, which is not in your list of projects`);
          return;
        }
        if (home.name !== currentName) setProject(home.name);
        void navigate(viewUrl(view.page, canonicalViewState(view.state)), { replace: true });
      } catch (e) {
        if (!cancelled) setProblem(isApiError(e, 404) ? `view ${viewId} not found in your projects` : errorMessage(e));
      }
    })();
    return () => {
      cancelled = true;
    };
    // the lookup runs once per view and list of projects; switching project must not start it again
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [viewId, valid, list]);

  if (!valid || problem) {
    return (
      <Stack>
        <Title order={2}>View not found</Title>
        <Text c="dimmed" data-testid="view-missing">
          {valid ? problem : `${id} is not a view id`}
        </Text>
      </Stack>
    );
  }
  return <PageLoading />;
}
