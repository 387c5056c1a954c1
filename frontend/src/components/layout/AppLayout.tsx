import { AppShell, Button, Group, Text, Title, UnstyledButton } from '@mantine/core';
import { useLocalStorage } from '@mantine/hooks';
import { useMemo } from 'react';
import { Navigate, NavLink, Outlet, useLocation } from 'react-router';
import { useLogout, useMe, useToken } from '../../hooks/auth';
import { ProjectContext, useCanWrite, useCurrentProject, useProjects } from '../../hooks/projects';
import { ProjectSwitcher } from './ProjectSwitcher';
import { SavedViewsNav } from './SavedViewsNav';

const DEFAULT_PROJECT = 'default';

function NavItem({ to, children }: { to: string; children: string }) {
  return (
    <NavLink to={to} end={to === '/experiments' || to === '/runs'} style={{ textDecoration: 'none' }}>
      {({ isActive }) => (
        <Text component="span" fw={isActive ? 700 : 400} c={isActive ? 'blue' : 'dark'} size="sm">
          {children}
        </Text>
      )}
    </NavLink>
  );
}

function ProjectProvider({ children }: { children: React.ReactNode }) {
  const [name, setProject] = useLocalStorage({ key: 'reasonlab.project', defaultValue: DEFAULT_PROJECT, getInitialValueInEffect: false });
  const { data: projects } = useProjects();
  const { data: me } = useMe();
  const id = projects?.find((p) => p.name === name)?.id ?? me?.memberships.find((m) => m.project === name)?.project_id;
  const value = useMemo(() => ({ id, name, setProject }), [id, name, setProject]);
  return <ProjectContext.Provider value={value}>{children}</ProjectContext.Provider>;
}

function Header() {
  const { data: me } = useMe();
  const logout = useLogout();
  return (
    <Group h="100%" px="md" justify="space-between" wrap="nowrap">
      <Group gap="lg" wrap="nowrap">
        <UnstyledButton component={NavLink} to="/experiments" aria-label="ReasonLab home">
          <Title order={4}>ReasonLab</Title>
        </UnstyledButton>
        <nav aria-label="Main">
          <Group gap="md">
            <NavItem to="/experiments">Experiments</NavItem>
            <NavItem to="/runs">Runs</NavItem>
            <NewLink />
            <NavItem to="/compare">Compare</NavItem>
            <NavItem to="/claims">Claims</NavItem>
            <NavItem to="/reports">Reports</NavItem>
            <NavItem to="/activity">Activity</NavItem>
            <NavItem to="/settings">Settings</NavItem>
          </Group>
        </nav>
      </Group>
      <Group gap="sm" wrap="nowrap">
        <ProjectSwitcher />
        <Text size="sm" data-testid="current-user">{me?.username}</Text>
        <Button size="xs" variant="subtle" onClick={logout}>
          Sign out
        </Button>
      </Group>
    </Group>
  );
}

/** Viewers cannot submit: the link is not there for them (the API refuses them anyway). */
function NewLink() {
  const canWrite = useCanWrite(useCurrentProject().id);
  return canWrite ? <NavItem to="/experiments/new">New experiment</NavItem> : null;
}

/** Signed-in pages: no credential (or an expired one: any 401 clears it) goes to the login page. */
export function AppLayout() {
  const token = useToken();
  const location = useLocation();
  if (!token) return <Navigate to={`/login?next=${encodeURIComponent(location.pathname + location.search)}`} replace />;
  return (
    <ProjectProvider>
      <AppShell header={{ height: 52 }} navbar={{ width: 200, breakpoint: 'sm', collapsed: { mobile: true } }} padding="md">
        <AppShell.Header>
          <Header />
        </AppShell.Header>
        <AppShell.Navbar p="sm">
          <SavedViewsNav />
        </AppShell.Navbar>
        <AppShell.Main>
          <Outlet />
        </AppShell.Main>
      </AppShell>
    </ProjectProvider>
  );
}
