// Skill-Mix with experts per token: each run's `skillmix_cell`, and the experiment's cells in the layout
// of paper 004's Table 1 (rows ept, columns k) or as a heatmap, with the best ept per k (section 2.2).
import type { KindViews } from '../../types';
import { SkillmixCellView } from '../SkillmixCellView';
import { SkillmixTableTab } from '../SkillmixTableTab';

export const views: KindViews = {
  resultViews: { skillmix_cell: SkillmixCellView },
  experimentTabs: [{ id: 'table', label: 'Skill-Mix table', View: SkillmixTableTab, reportResultKind: 'skillmix_cell' }],
};
