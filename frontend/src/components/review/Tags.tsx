import { Badge, CloseButton, Group, TextInput } from '@mantine/core';
import { useState } from 'react';
import { useTag, type Target } from '../../hooks/review';

export function Tags({ target, tags, canWrite }: { target: Target; tags: readonly string[]; canWrite: boolean }) {
  const tag = useTag(target);
  const [text, setText] = useState('');
  return (
    <Group gap={6} data-testid="tags">
      {tags.map((t) => (
        <Badge
          key={t}
          variant="light"
          tt="none"
          rightSection={canWrite ? <CloseButton size="xs" aria-label={`remove tag ${t}`} onClick={() => tag.mutate({ tag: t, add: false })} /> : null}
        >
          {t}
        </Badge>
      ))}
      {canWrite && (
        <form
          onSubmit={(e) => {
            e.preventDefault();
            const t = text.trim();
            if (t) tag.mutate({ tag: t, add: true }, { onSuccess: () => setText('') });
          }}
        >
          <TextInput size="xs" w={120} placeholder="+ tag" aria-label="add tag" value={text} onChange={(e) => setText(e.currentTarget.value)} />
        </form>
      )}
    </Group>
  );
}
