import { ActionIcon } from '@mantine/core';
import { useStar } from '../../hooks/experiments';

export function StarButton({ experimentId, starred }: { experimentId: number; starred: boolean }) {
  const star = useStar(experimentId);
  const on = star.isPending ? !!star.variables : starred;
  return (
    <ActionIcon
      variant="subtle"
      color="yellow"
      size="lg"
      aria-label={on ? 'unstar experiment' : 'star experiment'}
      aria-pressed={on}
      onClick={() => star.mutate(!on)}
    >
      <span style={{ fontSize: 20 }}>{on ? '★' : '☆'}</span>
    </ActionIcon>
  );
}
