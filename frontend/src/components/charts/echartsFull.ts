// The rest of the ECharts the dashboard draws (echarts.ts has the line charts): heatmaps (SRAVEN grid,
// routing, Skill-Mix), bars, scatter, parallel coordinates, visual maps, mark points and lines, and the toolbox.
import { BarChart, HeatmapChart, ParallelChart, ScatterChart } from 'echarts/charts';
import { MarkLineComponent, MarkPointComponent, ParallelComponent, ToolboxComponent, VisualMapComponent } from 'echarts/components';
import { echarts } from './echarts';

echarts.use([BarChart, HeatmapChart, ParallelChart, ScatterChart, VisualMapComponent, ParallelComponent, MarkPointComponent, MarkLineComponent, ToolboxComponent]);

export { echarts };
