import { Stack, Text } from '@mantine/core';
import { Caption, NotVisible } from '../Caption';
import { DataTable } from '../DataTable';
import type { ReportBlockType } from '../types';

export const block: ReportBlockType<'run_table'> = {
  type: 'run_table',
  label: 'Run table',
  View: ({ block, data }) => (
    <Stack gap={4}>
      {block.title ? <Text fw={600}>{block.title}</Text> : null}
      {!data ? null : !data.visible ? (
        <NotVisible />
      ) : (
        <>
          <DataTable columns={data.columns ?? []} rows={data.rows ?? []} />
          <Caption data={data} />
        </>
      )}
    </Stack>
  ),
};
