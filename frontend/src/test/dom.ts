import { act } from 'react';
import type { Root } from 'react-dom/client';
import { afterEach, beforeEach, vi } from 'vitest';

// What jsdom lacks and Mantine and the charts call: matchMedia and ResizeObserver, inert. One copy for every
// component test (call it in beforeEach).
export function installDomShims(): void {
  window.matchMedia ??= ((query: string) => ({
    matches: false, media: query, onchange: null, addListener: () => {}, removeListener: () => {},
    addEventListener: () => {}, removeEventListener: () => {}, dispatchEvent: () => false,
  })) as typeof window.matchMedia;
  globalThis.ResizeObserver ??= class implements ResizeObserver { observe() {} unobserve() {} disconnect() {} };
}

/** A size for every element (jsdom lays nothing out): a virtualised list needs its scroll element's height
 *  to draw rows. Spies, undone by `vi.restoreAllMocks()`. */
export function sizeElements(height = 500, width = 1000): void {
  vi.spyOn(Element.prototype, 'clientHeight', 'get').mockReturnValue(height);
  vi.spyOn(Element.prototype, 'clientWidth', 'get').mockReturnValue(width);
}

/** Where a component test renders: its React root and the document element that holds it. */
export interface TestContainer {
  readonly element: HTMLElement;
  root: Root | null;
}

/** One container per test of the file that calls it: made before each test (after the DOM shims and
 *  `setup`, e.g. sizeElements), and after each the root it holds unmounted, the element removed and the
 *  spies restored. */
export function testContainer(setup?: () => void): TestContainer {
  let element: HTMLElement | null = null;
  const target = {
    root: null as Root | null,
    get element(): HTMLElement {
      if (!element) throw new Error('testContainer: read outside a test');
      return element;
    },
  };
  beforeEach(() => {
    installDomShims();
    setup?.();
    element = document.body.appendChild(document.createElement('div'));
  });
  afterEach(() => {
    act(() => target.root?.unmount());
    target.root = null;
    element?.remove();
    element = null;
    vi.restoreAllMocks();
  });
  return target;
}
