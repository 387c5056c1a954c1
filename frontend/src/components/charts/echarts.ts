// ECharts, tree-shaken to what line charts draw (a run's metrics, overlaid runs, curves), on the canvas
// renderer (big series stay fast where SVG would create a node per point). Heatmaps, bars, scatter,
// parallel coordinates, visual maps, mark points and the toolbox are in echartsFull.ts, loaded by the first
// chart whose option needs one of them (echartsNeeds.ts): the run page's charts do without their code.
import { LineChart } from 'echarts/charts';
import { DataZoomComponent, GridComponent, LegendComponent, TitleComponent, TooltipComponent } from 'echarts/components';
import * as echarts from 'echarts/core';
import { CanvasRenderer } from 'echarts/renderers';

echarts.use([LineChart, GridComponent, TooltipComponent, DataZoomComponent, LegendComponent, TitleComponent, CanvasRenderer]);

export { echarts };
export type EChartsOption = echarts.EChartsCoreOption;
export type ECharts = echarts.ECharts;
