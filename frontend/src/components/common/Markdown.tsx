// Comments are markdown; react-markdown renders without raw HTML, so a comment cannot inject markup.
import { TypographyStylesProvider } from '@mantine/core';
import ReactMarkdown from 'react-markdown';

export function Markdown({ children }: { children: string }) {
  return (
    <TypographyStylesProvider fz="sm">
      <ReactMarkdown>{children}</ReactMarkdown>
    </TypographyStylesProvider>
  );
}
