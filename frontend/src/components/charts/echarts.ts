// ECharts, tree-shaken to what line charts draw (a run's metrics, overlaid runs, curves), on the canvas
// renderer (big series stay fast where SVG would create a node per point). Heatmaps, bars, scatter,
// parallel coordinates, visual maps, mark points and the toolbox are in echartsFull.ts, loaded by the first
// chart whose option needs one of them (echartsNeeds.ts): the run page's charts do without their code.
import { LineChart } from 'echarts/charts';
import { DataZoomComponent, GridComponent, LegendComponent, TitleComponent, TooltipComponent } from 'echarts/components';
import { init, use, type ECharts as EChartsInstance, type EChartsCoreOption } from 'echarts/core';
import { CanvasRenderer } from 'echarts/renderers';

use([LineChart, GridComponent, TooltipComponent, DataZoomComponent, LegendComponent, TitleComponent, CanvasRenderer]);

/** What the dashboard calls of ECharts' core, by name: a namespace import (`* as echarts`) kept every
 *  export of echarts/core in the run page's chunk (its helpers, graphic and map APIs, ~0.1 MB). */
export const echarts = { init, use };
export type EChartsOption = EChartsCoreOption;
export type ECharts = EChartsInstance;
