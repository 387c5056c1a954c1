import { Alert } from '@mantine/core';
import { Markdown } from '../../components/common/Markdown';
import type { ReportBlockType } from '../types';

const COLOR = { info: 'blue', success: 'green', warning: 'yellow', danger: 'red' } as const;

export const block: ReportBlockType<'callout'> = {
  type: 'callout',
  label: 'Callout',
  create: (id) => ({ id, type: 'callout', tone: 'info', text: 'Note' }),
  View: ({ block }) => (
    <Alert color={COLOR[block.tone ?? 'info']} title={(block.tone ?? 'info').toUpperCase()}>
      <Markdown math>{block.text}</Markdown>
    </Alert>
  ),
};
