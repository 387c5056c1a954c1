// Which end of a metric is the good one, read from its key: a loss, an error or a perplexity is better
// low, an accuracy or a score better high. Charts that colour runs by a metric (the sweep's parallel
// coordinates) paint the good end green whichever end that is; a key that says neither gets a scale
// with no good or bad colour.

export type MetricGoal = 'min' | 'max';

/** Words of a key that make lower better. */
const LOWER_IS_BETTER = new Set(['loss', 'nll', 'ppl', 'perplexity', 'err', 'error', 'errors', 'mse', 'mae', 'rmse', 'cv', 'regret', 'latency']);
/** Words of a key that make higher better. */
const HIGHER_IS_BETTER = new Set([
  'acc', 'accuracy', 'score', 'scores', 'f1', 'auc', 'bleu', 'rouge', 'reward', 'precision', 'recall', 'em', 'exact', 'correct', 'consistency',
]);

/**
 * The goal of `key`, from its last word that names one (`moe/aux_loss` -> min, `ood_acc/f0` -> max, the
 * word nearest the end decides: `acc_loss` is a loss); null when no word does (`lr`, `moe/load/e0`).
 */
export function metricGoal(key: string): MetricGoal | null {
  const words = key.toLowerCase().split(/[^a-z0-9]+/).filter(Boolean);
  for (let i = words.length - 1; i >= 0; i--) {
    if (LOWER_IS_BETTER.has(words[i]!)) return 'min';
    if (HIGHER_IS_BETTER.has(words[i]!)) return 'max';
  }
  return null;
}

/** From worse to better: red, amber, green. */
export const WORSE_TO_BETTER = ['#d9480f', '#fab005', '#2b8a3e'];
/** A metric with no known goal: light to dark, no colour that reads as good or bad. */
export const NEUTRAL_SCALE = ['#d0ebff', '#4dabf7', '#1864ab'];

/** A colour scale's colours from its low end to its high end, for a metric of `goal`. */
export function scaleColours(goal: MetricGoal | null): string[] {
  if (goal === 'max') return WORSE_TO_BETTER;
  if (goal === 'min') return [...WORSE_TO_BETTER].reverse();
  return NEUTRAL_SCALE;
}
