// A run's summary holds a metric whose latest point is NaN or an infinity as that label ("NaN", "Infinity",
// "-Infinity": JSON has no such numbers; common/nonfinite.py). Tables show the label; sorting, filtering
// and group statistics read it as the number it stands for (a NaN sorts with the missing values, and is
// left out of means, as the backend's statistics leave it out).

import type { Run } from '../api/types';

export type SummaryValue = Run['summary'][string] | undefined;

const NUMBERS: Record<string, number> = { NaN: Number.NaN, Infinity: Number.POSITIVE_INFINITY, '-Infinity': Number.NEGATIVE_INFINITY };

/** A summary value as a number (a label as the non-finite number it names); null or undefined kept. */
export function summaryNumber(value: SummaryValue): number | null | undefined {
  return typeof value === 'string' ? NUMBERS[value] : value;
}
