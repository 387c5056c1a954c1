import { Alert, Badge, Center, Group, Loader, Stack, Tabs, Title } from '@mantine/core';
import { Navigate, useNavigate, useParams } from 'react-router';
import { ProjectDatasets } from '../components/settings/ProjectDatasets';
import { ProjectSecrets } from '../components/settings/ProjectSecrets';
import { useMe } from '../hooks/auth';
import { useCurrentProject, useProjects, useRole } from '../hooks/projects';

/** The settings' tabs, each its own URL (`/settings/secrets`, `/settings/datasets`); `/settings` opens the first. */
const TABS = [
  { value: 'secrets', label: 'Secrets' },
  { value: 'datasets', label: 'Datasets' },
] as const;
type Tab = (typeof TABS)[number]['value'];
const isTab = (t: string | undefined): t is Tab => TABS.some((x) => x.value === t);

/** The settings of the project the header's switcher selected. */
export function ProjectSettingsPage() {
  const { tab } = useParams();
  const navigate = useNavigate();
  const project = useCurrentProject();
  const projects = useProjects();
  const role = useRole(project.id);
  const { data: me } = useMe();
  if (!isTab(tab)) return <Navigate to={`/settings/${TABS[0].value}`} replace />;
  return (
    <Stack>
      <Group gap="sm">
        <Title order={2}>Settings of {project.name}</Title>
        {role && (
          <Badge variant="light" color="gray" tt="none" data-testid="settings-role">
            you: {role}
          </Badge>
        )}
      </Group>
      {project.id === undefined ? (
        projects.isPending ? (
          <Center p="xl">
            <Loader />
          </Center>
        ) : (
          <Alert color="gray" title="Not found">No project named {project.name} is visible to you.</Alert>
        )
      ) : (
        <Tabs value={tab} onChange={(t) => t && navigate(`/settings/${t}`)} keepMounted={false}>
          <Tabs.List>
            {TABS.map((t) => (
              <Tabs.Tab key={t.value} value={t.value}>
                {t.label}
              </Tabs.Tab>
            ))}
          </Tabs.List>
          <Tabs.Panel value="secrets" pt="md">
            <ProjectSecrets projectId={project.id} canManage={role === 'admin'} />
          </Tabs.Panel>
          <Tabs.Panel value="datasets" pt="md">
            <ProjectDatasets projectId={project.id} role={role} username={me?.username} />
          </Tabs.Panel>
        </Tabs>
      )}
    </Stack>
  );
}
