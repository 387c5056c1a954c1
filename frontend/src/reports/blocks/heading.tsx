import { Title } from '@mantine/core';
import type { ReportBlockType } from '../types';

export const block: ReportBlockType<'heading'> = {
  type: 'heading',
  label: 'Heading',
  create: (id) => ({ id, type: 'heading', text: 'Heading', level: 2 }),
  View: ({ block }) => <Title order={(block.level ?? 2) + 1 as 2 | 3 | 4}>{block.text}</Title>,
};
