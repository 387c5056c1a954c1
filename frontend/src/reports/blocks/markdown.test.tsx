// @vitest-environment jsdom
// A report's markdown (and callout) text with LaTeX math, rendered in jsdom as the dashboard draws it:
// `$...$` and `$$...$$` become MathML <math> elements (KaTeX, loaded on demand), markdown leaves `_` and
// `*` inside math alone, a bad formula shows as its source marked as an error, and math that asks for a
// link, a class, an image or raw HTML makes no link, no script and no element outside MathML.
import { MantineProvider } from '@mantine/core';
import { act, type ReactNode } from 'react';
import { createRoot, type Root } from 'react-dom/client';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ReportBlock } from '../../api/types';
import { KATEX_OPTIONS } from '../../components/common/MathMarkdown';
import { Markdown } from '../../components/common/Markdown';
import { installDomShims } from '../../test/dom';
import { until } from '../../test/mount';
import { block as callout } from './callout';
import { block as markdown } from './markdown';

(globalThis as { IS_REACT_ACT_ENVIRONMENT?: boolean }).IS_REACT_ACT_ENVIRONMENT = true;

const HOSTILE = [
  '$\\href{javascript:alert(1)}{x}$',
  '$\\url{javascript:alert(2)}$',
  '$\\htmlClass{a}{x} \\htmlStyle{background:url(x)}{y} \\htmlData{onclick=alert(3)}{z}$',
  '$\\includegraphics{x.png}$',
  '$<script>alert(4)</script>$',
  '$\\text{<img src=x onerror=alert(5)>}$',
  '$$\n\\href{javascript:alert(6)}{\\text{<script>alert(6)</script>}}\n$$',
];
const XSS = '<script>alert(7)</script><img src=x onerror=alert(8)> [x](javascript:alert(9))';

let container: HTMLElement;
let root: Root;

beforeEach(() => {
  installDomShims();
  container = document.createElement('div');
  document.body.appendChild(container);
  root = createRoot(container);
});

afterEach(async () => {
  await act(async () => root.unmount());
  container.remove();
});

async function show(node: ReactNode): Promise<void> {
  await act(async () => {
    root.render(<MantineProvider env="test">{node}</MantineProvider>);
  });
}

async function view(text: string, type: 'markdown' | 'callout' = 'markdown'): Promise<HTMLElement> {
  const b = (type === 'markdown' ? { id: 'm', type, text } : { id: 'c', type, tone: 'info', text }) as ReportBlock;
  const View = (type === 'markdown' ? markdown.View : callout.View) as (p: { block: ReportBlock }) => ReactNode;
  await show(<View block={b} />);
  // KaTeX arrives on demand: until then the text shows as plain markdown
  await until(() => container.querySelector('math, .katex-error'));
  return container;
}

describe('math in report text', () => {
  it('typesets $x^2$ inline and $$...$$ as display math, MathML only', async () => {
    const out = await view('The loss $x^2$ falls.\n\n$$\n\\frac{a}{b}\n$$\n');
    const [inline, display] = [...out.querySelectorAll('math')];
    expect(inline!.namespaceURI).toBe('http://www.w3.org/1998/Math/MathML');
    expect(inline!.querySelector('msup')?.textContent).toBe('x2');
    expect(inline!.closest('.katex-display')).toBeNull();
    expect(display!.getAttribute('display')).toBe('block');
    expect(display!.querySelector('mfrac')).not.toBeNull();
    // MathML only: none of KaTeX's HTML rendering, which would need its stylesheet and fonts
    expect(out.querySelector('.katex-html, .strut, .vlist')).toBeNull();
    expect(out.textContent).toContain('The loss');
  });

  it('leaves _ and * inside math to TeX, not markdown', async () => {
    const out = await view('$a*b*c$ and $_{i}x$ or $y_{j}$ then *em*');
    expect(out.querySelectorAll('math')).toHaveLength(3);
    expect([...out.querySelectorAll('em')].map((e) => e.textContent)).toEqual(['em']);
    expect([...out.querySelectorAll('math')[0]!.querySelectorAll('mo')].map((m) => m.textContent)).toEqual(['∗', '∗']);
  });

  it('shows a bad formula as its source marked as an error, not a crash', async () => {
    const out = await view('before $\\frac{$ after');
    const error = out.querySelector('.katex-error');
    expect(error?.textContent).toBe('\\frac{');
    expect(error?.getAttribute('title')).toMatch(/ParseError/);
    expect(out.textContent).toContain('after');
    // a macro that expands forever stops at maxExpand and is an error too
    const bomb = await view('$\\def\\a{\\a\\a}\\a$');
    expect(bomb.querySelector('.katex-error')?.getAttribute('title')).toMatch(/Too many expansions/);
  });

  it('makes no link, script, image or handler of hostile math or the text around it', async () => {
    const out = await view([...HOSTILE, XSS].join('\n\n'));
    await until(() => out.querySelectorAll('math').length >= HOSTILE.length);
    expect(out.querySelector('a[href], script, img, iframe, object, embed, foreignObject')).toBeNull();
    for (const el of out.querySelectorAll('*')) {
      for (const attr of el.getAttributeNames()) {
        expect(attr.startsWith('on') || attr === 'href' || attr === 'src' || attr === 'xlink:href').toBe(false);
      }
      expect(el.getAttribute('style') ?? '').not.toMatch(/url\(/);
      expect(el.className.toString()).not.toMatch(/^a$|(^|\s)a(\s|$)/); // \htmlClass{a} made no class
    }
    // each command needing trust is shown as its name in red, the formula's source kept as its annotation
    expect(out.textContent).toContain('\\href');
    expect(out.textContent).toContain('\\includegraphics');
  });

  it('typesets a callout too, and keeps the settings that bound KaTeX', async () => {
    const out = await view('Note: $\\sqrt{2}$', 'callout');
    expect(out.querySelector('math msqrt')).not.toBeNull();
    expect(KATEX_OPTIONS).toMatchObject({ output: 'mathml', trust: false });
    expect(KATEX_OPTIONS.maxExpand).toBeLessThanOrEqual(1000);
    expect(Number.isFinite(KATEX_OPTIONS.maxSize)).toBe(true);
  });

  it('leaves a comment (Markdown without math) as text', async () => {
    await show(<Markdown>{'a comment costs $x^2$'}</Markdown>);
    await act(() => new Promise((r) => setTimeout(r, 50)));
    expect(container.querySelector('math')).toBeNull();
    expect(container.textContent).toContain('$x^2$');
  });
});
