// Markdown: react-markdown renders without raw HTML, so a comment or a report's text cannot inject markup.
// With `math` (a report's markdown and callout blocks; comments stay plain), LaTeX math is typeset by
// MathMarkdown, loaded on demand the first time a text with math is shown; until it arrives the text
// shows as plain markdown.
import { TypographyStylesProvider } from '@mantine/core';
import { lazy, Suspense } from 'react';
import ReactMarkdown from 'react-markdown';

const MathMarkdown = lazy(() => import('./MathMarkdown').then((m) => ({ default: m.MathMarkdown })));

/** Whether a text may hold math for remark-math: a dollar, or a ```math / ~~~math fence. */
export function hasMath(text: string): boolean {
  return text.includes('$') || /^ {0,3}(`{3,}|~{3,})\s*math\b/m.test(text);
}

export function Markdown({ children, math = false }: { children: string; math?: boolean }) {
  const plain = <ReactMarkdown>{children}</ReactMarkdown>;
  return (
    <TypographyStylesProvider fz="sm">
      {math && hasMath(children) ? (
        <Suspense fallback={plain}>
          <MathMarkdown>{children}</MathMarkdown>
        </Suspense>
      ) : (
        plain
      )}
    </TypographyStylesProvider>
  );
}
