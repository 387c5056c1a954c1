// ECharts, tree-shaken to what the dashboard draws, on the canvas renderer (big series, heatmaps,
// parallel coordinates stay fast where SVG would create a node per point).
import { BarChart, HeatmapChart, LineChart, ParallelChart, ScatterChart } from 'echarts/charts';
import {
  DataZoomComponent, GridComponent, LegendComponent, MarkPointComponent, ParallelComponent, TitleComponent,
  TooltipComponent, VisualMapComponent, ToolboxComponent,
} from 'echarts/components';
import * as echarts from 'echarts/core';
import { CanvasRenderer } from 'echarts/renderers';

echarts.use([
  BarChart, LineChart, HeatmapChart, ParallelChart, ScatterChart, GridComponent, TooltipComponent, DataZoomComponent, LegendComponent,
  VisualMapComponent, TitleComponent, ParallelComponent, MarkPointComponent, ToolboxComponent, CanvasRenderer,
]);

export { echarts };
export type EChartsOption = echarts.EChartsCoreOption;
export type ECharts = echarts.ECharts;
