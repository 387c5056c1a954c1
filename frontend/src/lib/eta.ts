// Live progress and ETA from the run's `progress` events ({done, total, message}). The rate is measured
// over a sliding window of recent samples so a run that sped up or slowed down is estimated by its
// current pace, not its average since the start.
export interface ProgressSample {
  done: number;
  /** milliseconds since epoch when the sample arrived */
  at: number;
}

/** How far back the rate looks, in milliseconds. */
export const ETA_WINDOW_MS = 30_000;

export function addSample(samples: readonly ProgressSample[], sample: ProgressSample): ProgressSample[] {
  const kept = samples.filter((s) => sample.at - s.at <= ETA_WINDOW_MS && s.done <= sample.done);
  return [...kept, sample];
}

/** Seconds left at the recent pace, or null when it cannot be told yet. */
export function etaSeconds(samples: readonly ProgressSample[], total: number | null | undefined): number | null {
  if (!total || samples.length < 2) return null;
  const first = samples[0]!;
  const last = samples[samples.length - 1]!;
  const dt = (last.at - first.at) / 1000;
  const dd = last.done - first.done;
  if (dt <= 0 || dd <= 0) return null;
  return Math.max(0, (total - last.done) / (dd / dt));
}

export function formatDuration(seconds: number | null): string {
  if (seconds === null || !Number.isFinite(seconds)) return '—';
  const s = Math.round(seconds);
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m ${String(s % 60).padStart(2, '0')}s`;
  return `${Math.floor(s / 3600)}h ${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m`;
}

export function percent(done: number, total: number | null | undefined): number | null {
  if (!total || total <= 0) return null;
  return Math.max(0, Math.min(100, (100 * done) / total));
}
