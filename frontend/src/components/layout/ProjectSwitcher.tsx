import { Select } from '@mantine/core';
import { useMe } from '../../hooks/auth';
import { useCurrentProject, useProjects } from '../../hooks/projects';

export function ProjectSwitcher() {
  const { name, setProject } = useCurrentProject();
  const { data: projects } = useProjects();
  const { data: me } = useMe();
  const names = projects?.map((p) => p.name) ?? me?.memberships.map((m) => m.project) ?? [name];
  const role = me?.is_admin ? 'admin' : me?.memberships.find((m) => m.project === name)?.role;
  return (
    <Select
      aria-label="Project"
      data-testid="project-switcher"
      size="xs"
      w={200}
      value={name}
      data={[...new Set([...names, name])]}
      onChange={(v) => v && setProject(v)}
      allowDeselect={false}
      rightSectionWidth={70}
      rightSection={role ? <span style={{ fontSize: 11, opacity: 0.7 }}>{role}</span> : null}
      // the list is built when opened: kept mounted (Mantine's default), its hidden dropdown was placed by
      // Floating UI at every page's load, a style and layout pass forced before the page's first frame
      comboboxProps={{ keepMounted: false }}
    />
  );
}
