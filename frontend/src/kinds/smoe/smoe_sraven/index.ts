// SMoE on SRAVEN: each run's `sraven_cell` (accuracies, per-feature bars) and the experiment's grid of
// cells as heatmaps, the SMoE paper's figure (section 2.1).
import type { KindViews } from '../../types';
import { SravenCellView } from './SravenCellView';
import { SravenGridTab } from './SravenGridTab';

export const views: KindViews = {
  resultViews: { sraven_cell: SravenCellView },
  experimentTabs: [{ id: 'grid', label: 'SRAVEN grid', View: SravenGridTab, reportResultKind: 'sraven_cell' }],
};
