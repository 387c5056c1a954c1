// uPlot (~50 KB), what a run's metric charts draw with (LinePlot.tsx): one canvas per chart, built for long
// time series. A module of its own so that the run page's loader can ask for it with the page's first
// requests (router.tsx prefetchRun) and early.ts can preload it (vite.config.ts PAGE_MODULES). The other
// charts (overlays, heatmaps, curves) stay on ECharts (echarts.ts), loaded by the pages that draw them.
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';

export { uPlot };
