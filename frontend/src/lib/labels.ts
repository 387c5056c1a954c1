// Legend labels for overlaid runs: the run's name (when a member named it) and id, plus only the params
// that differ between the shown runs.
import { formatValue } from './dotted';
import { formatCount } from './plainFormat';

export function varyingParams(runs: readonly { params: Record<string, unknown> }[]): string[] {
  const keys = new Set<string>();
  for (const r of runs) for (const k of Object.keys(r.params)) keys.add(k);
  return [...keys].sort().filter((k) => new Set(runs.map((r) => JSON.stringify(r.params[k]))).size > 1);
}

/** A run as people call it: `baseline (run 12)` when named, else `run 12`. The id stays: names repeat. */
export function runTitle(run: { id: number; name?: string | null }): string {
  return run.name ? `${run.name} (run ${run.id})` : `run ${run.id}`;
}

export function runLabel(run: { id: number; name?: string | null; params: Record<string, unknown> }, keys: readonly string[]): string {
  const parts = keys.filter((k) => k in run.params).map((k) => `${k}=${formatValue(run.params[k])}`);
  return [runTitle(run), ...parts].join(' ');
}

/** "1 run", "2 runs", "0 runs": a count with its noun, plural unless the count is one. */
export function countOf(n: number, noun: string, nouns = `${noun}s`): string {
  return `${formatCount(n)} ${n === 1 ? noun : nouns}`;
}
