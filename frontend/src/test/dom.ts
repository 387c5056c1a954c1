// What jsdom lacks and Mantine and the charts call: matchMedia and ResizeObserver, inert. One copy for every
// component test (call it in beforeEach).
export function installDomShims(): void {
  window.matchMedia ??= ((query: string) => ({
    matches: false, media: query, onchange: null, addListener: () => {}, removeListener: () => {},
    addEventListener: () => {}, removeEventListener: () => {}, dispatchEvent: () => false,
  })) as typeof window.matchMedia;
  globalThis.ResizeObserver ??= class implements ResizeObserver { observe() {} unobserve() {} disconnect() {} };
}
