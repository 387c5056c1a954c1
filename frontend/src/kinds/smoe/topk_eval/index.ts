// topk_eval: each topk_eval_point (one train k, one k') and the experiment's train-k x eval-k' matrix with
// the lines of score against k' (SMoE paper, section 2.1).
import type { KindViews } from '../../types';
import { TopkMatrixTab } from './TopkMatrixTab';
import { TopkPointView } from './TopkPointView';

export const views: KindViews = {
  resultViews: { topk_eval_point: TopkPointView },
  experimentTabs: [{ id: 'matrix', label: 'Top-k matrix', View: TopkMatrixTab, reportResultKind: 'topk_eval_point' }],
};
