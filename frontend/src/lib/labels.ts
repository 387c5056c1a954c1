// Legend labels for overlaid runs: the run id plus only the params that differ between the shown runs.
import { formatValue } from './dotted';

export function varyingParams(runs: readonly { params: Record<string, unknown> }[]): string[] {
  const keys = new Set<string>();
  for (const r of runs) for (const k of Object.keys(r.params)) keys.add(k);
  return [...keys].sort().filter((k) => new Set(runs.map((r) => JSON.stringify(r.params[k]))).size > 1);
}

export function runLabel(run: { id: number; params: Record<string, unknown> }, keys: readonly string[]): string {
  const parts = keys.filter((k) => k in run.params).map((k) => `${k}=${formatValue(run.params[k])}`);
  return parts.length ? `run ${run.id} ${parts.join(' ')}` : `run ${run.id}`;
}
