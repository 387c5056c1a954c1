// A running run's ETA: the API's estimate (`progress.eta_at`, lib/eta.ts), counted down every second.
import { Text } from '@mantine/core';
import { useEffect, useState } from 'react';
import { etaSeconds, formatEta } from '../../lib/eta';
import { isoDateTime } from '../../lib/plainFormat';

/** The time now, renewed every `ms` while `ticking`. */
export function useNow(ticking: boolean, ms = 1000): number {
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    if (!ticking) return;
    setNow(Date.now());
    const timer = setInterval(() => setNow(Date.now()), ms);
    return () => clearInterval(timer);
  }, [ticking, ms]);
  return now;
}

function title(etaAt: string | null | undefined): string {
  return etaAt
    ? `expected to finish at ${isoDateTime(etaAt)}, at its progress rate since this attempt's first report`
    : 'no estimate yet: the run has no total, or has not moved since its first progress report';
}

/** "ETA 3m 20s" on the run page. */
export function RunEta({ etaAt }: { etaAt: string | null | undefined }) {
  const now = useNow(Boolean(etaAt));
  return (
    <Text size="sm" c="dimmed" data-testid="eta" title={title(etaAt)}>
      ETA {formatEta(etaSeconds(etaAt, now))}
    </Text>
  );
}

/** The runs table's ETA cell of a running run. */
export function EtaCell({ etaAt }: { etaAt: string | null | undefined }) {
  const now = useNow(Boolean(etaAt));
  return (
    <span data-testid="eta-cell" title={title(etaAt)}>
      {formatEta(etaSeconds(etaAt, now))}
    </span>
  );
}
