import { Button, Divider, Group, Paper, Stack, Tabs, Text, Textarea } from '@mantine/core';
import { useState } from 'react';
import { useAddComment, useComments, type Target } from '../../hooks/review';
import { Markdown } from '../common/Markdown';
import { timeAgo } from '../common/time';

export function Comments({ target, canWrite }: { target: Target; canWrite: boolean }) {
  const comments = useComments(target);
  const add = useAddComment(target);
  const [body, setBody] = useState('');
  const [tab, setTab] = useState<string | null>('write');
  return (
    <Stack gap="sm" data-testid="comments">
      {(comments.data ?? []).map((c) => (
        <Paper key={c.id} withBorder p="sm" data-testid="comment">
          <Group gap="xs" mb={4}>
            <Text fw={600} size="sm">{c.author}</Text>
            <Text size="xs" c="dimmed">{timeAgo(c.created_at)}</Text>
          </Group>
          <Markdown>{c.body}</Markdown>
        </Paper>
      ))}
      {comments.data?.length === 0 && <Text c="dimmed" size="sm">No comments yet.</Text>}
      {canWrite && (
        <form
          onSubmit={(e) => {
            e.preventDefault();
            if (body.trim()) add.mutate(body, { onSuccess: () => setBody('') });
          }}
        >
          <Divider my="xs" />
          <Tabs value={tab} onChange={setTab}>
            <Tabs.List>
              <Tabs.Tab value="write">Write</Tabs.Tab>
              <Tabs.Tab value="preview">Preview</Tabs.Tab>
            </Tabs.List>
            <Tabs.Panel value="write" pt="xs">
              <Textarea label="Comment (markdown)" value={body} onChange={(e) => setBody(e.currentTarget.value)} autosize minRows={3} />
            </Tabs.Panel>
            <Tabs.Panel value="preview" pt="xs">
              <Paper withBorder p="sm" mih={80}>
                <Markdown>{body || '_nothing to preview_'}</Markdown>
              </Paper>
            </Tabs.Panel>
          </Tabs>
          <Group justify="flex-end" mt="xs">
            <Button type="submit" size="xs" loading={add.isPending} disabled={!body.trim()}>
              Comment
            </Button>
          </Group>
        </form>
      )}
    </Stack>
  );
}
