import { vi } from 'vitest';

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
