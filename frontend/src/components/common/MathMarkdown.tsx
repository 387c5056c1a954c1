// Markdown with LaTeX math, for a report's text (markdown and callout blocks): remark-math reads `$...$`
// (inline) and `$$`-fenced lines or ```math (display), rehype-katex typesets each formula. Loaded on demand
// (Markdown.tsx): KaTeX stays out of the dashboard's entry and out of every page without math.
// KaTeX writes MathML only (`output: 'mathml'`): Chromium draws it natively, so no KaTeX stylesheet or font
// is loaded and nothing asks the CSP for more (MathML elements; style attributes only for \fcolorbox's
// border and an error's colour, which the dashboard's `style-src 'unsafe-inline'` allows). The output
// goes through react-markdown's tree like any markdown (no raw HTML, its URL filter on links).
import type { KatexOptions } from 'katex';
import ReactMarkdown, { type Options } from 'react-markdown';
import rehypeKatex from 'rehype-katex';
import remarkMath from 'remark-math';

/** KaTeX's settings for a report's math. `throwOnError` is rehype-katex's to set: it tries each formula
 *  strictly and, on an error, renders it again with `throwOnError: false`, so a bad formula shows as its
 *  source in red with the error as its title, never an exception. */
export const KATEX_OPTIONS = {
  output: 'mathml',
  // no \href, \url, \includegraphics, \htmlClass/\htmlStyle/\htmlId/\htmlData: they render as red text
  trust: false,
  maxExpand: 1000, // macro expansions per formula: \def\a{\a\a}\a is an error, not a hang
  maxSize: 20, // ems: \rule and \kern no wider than this
  strict: 'ignore', // LaTeX-incompatible input (unicode in math) renders without console warnings
  errorColor: '#c92a2a',
} as const satisfies KatexOptions;

const remarkPlugins: Options['remarkPlugins'] = [remarkMath];
const rehypePlugins: Options['rehypePlugins'] = [[rehypeKatex, KATEX_OPTIONS]];

export function MathMarkdown({ children }: { children: string }) {
  return (
    <ReactMarkdown remarkPlugins={remarkPlugins} rehypePlugins={rehypePlugins}>
      {children}
    </ReactMarkdown>
  );
}
