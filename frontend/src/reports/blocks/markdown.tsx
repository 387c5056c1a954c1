// Markdown text with LaTeX math: rendered without raw HTML (react-markdown), so no text of a report injects
// markup; `$...$` and `$$...$$` typeset as MathML (components/common/MathMarkdown.tsx, loaded on demand).
import { Markdown } from '../../components/common/Markdown';
import type { ReportBlockType } from '../types';

export const block: ReportBlockType<'markdown'> = {
  type: 'markdown',
  label: 'Markdown',
  create: (id) => ({ id, type: 'markdown', text: '' }),
  View: ({ block }) => <Markdown math>{block.text}</Markdown>,
};
