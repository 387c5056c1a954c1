// A running run's ETA. The API answers `progress.eta_at` (backend/runs/eta.py): when the run should be
// done at the progress rate of its current attempt, measured from the attempt's first progress report.
// So a page opened mid-run, and the runs table, have an ETA at once, with no progress history of their
// own; between two reports the page counts down to that time.

/** Seconds from `now` (ms since epoch) to `etaAt`; null without an estimate, negative once it has passed. */
export function etaSeconds(etaAt: string | null | undefined, now: number): number | null {
  if (!etaAt) return null;
  const at = Date.parse(etaAt);
  return Number.isFinite(at) ? (at - now) / 1000 : null;
}

/** What "ETA …" says: the time left, '—' without an estimate, 'overdue' once the estimate has passed. */
export function formatEta(seconds: number | null): string {
  if (seconds === null || Number.isNaN(seconds)) return '—';
  if (seconds <= 0) return 'overdue';
  return formatDuration(seconds);
}

export function formatDuration(seconds: number | null): string {
  if (seconds === null || !Number.isFinite(seconds)) return '—';
  const s = Math.round(seconds);
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m ${String(s % 60).padStart(2, '0')}s`;
  if (s < 86400) return `${Math.floor(s / 3600)}h ${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m`;
  return `${Math.floor(s / 86400)}d ${String(Math.floor((s % 86400) / 3600)).padStart(2, '0')}h`;
}

export function percent(done: number, total: number | null | undefined): number | null {
  if (!total || total <= 0) return null;
  return Math.max(0, Math.min(100, (100 * done) / total));
}
