import { Anchor, Badge, Group, Stack, Text, Timeline, Title } from '@mantine/core';
import { Link } from 'react-router';
import { QueryState } from '../components/common/QueryState';
import { timeAgo } from '../components/common/time';
import { runTitle } from '../lib/labels';
import { activityLine } from '../lib/runNotes';
import { useActivity, useCurrentProject } from '../hooks/projects';

// a run's attempts: requeued after its worker was lost, released at a worker's
// shutdown, resumed from its checkpoint by the next attempt
const COLOURS: Record<string, string> = {
  submitted: 'blue', finished: 'green', failed: 'red', cancelled: 'yellow', commented: 'grape', reviewed: 'teal',
  requeued: 'orange', released: 'gray', resumed: 'cyan', renamed: 'indigo',
  claimed: 'blue', edited: 'indigo', locked: 'teal',
};

export function ActivityPage() {
  const project = useCurrentProject();
  const activity = useActivity(project.id);
  return (
    <Stack>
      <Title order={2}>Activity in {project.name}</Title>
      <QueryState isPending={activity.isPending && project.id !== undefined} error={activity.error}>
        {() => (
          <Timeline bulletSize={14} lineWidth={2} data-testid="activity">
            {(activity.data ?? []).map((a) => {
              const line = activityLine(a.actor, a.message);
              return (
              <Timeline.Item key={a.id} color={COLOURS[a.type] ?? 'gray'}>
                <Group gap="xs">
                  <Badge size="xs" color={COLOURS[a.type] ?? 'gray'} variant="light">{a.type}</Badge>
                  <Text size="sm" fw={600}>{line.actor}</Text>
                  <Text size="sm">{line.message}</Text>
                  {a.run_id ? (
                    <Anchor size="sm" component={Link} to={`/runs/${a.run_id}`} data-testid="activity-run">{runTitle({ id: a.run_id, name: a.run_name })}</Anchor>
                  ) : a.claim_id ? (
                    <Anchor size="sm" component={Link} to="/claims" data-testid="activity-claim">claims</Anchor>
                  ) : a.experiment_id ? (
                    <Anchor size="sm" component={Link} to={`/experiments/${a.experiment_id}`}>experiment {a.experiment_id}</Anchor>
                  ) : null}
                  <Text size="xs" c="dimmed">{timeAgo(a.created_at)}</Text>
                </Group>
              </Timeline.Item>
              );
            })}
          </Timeline>
        )}
      </QueryState>
      {activity.data?.length === 0 && <Text c="dimmed">Nothing happened yet.</Text>}
    </Stack>
  );
}
