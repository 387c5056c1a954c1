// The line under a result view naming the interval its [lo, hi] are (lib/interval.ts intervalCaption).
import { Text } from '@mantine/core';

export function IntervalCaption({ text }: { text: string | null }) {
  if (!text) return null;
  return (
    <Text size="xs" c="dimmed" data-testid="ci-caption">
      {text}
    </Text>
  );
}
