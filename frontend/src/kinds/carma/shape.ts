// Shapes the carma kind's results into what the CARMA paper plots: CAP curves per variant over
// normalised depth (Figure 2), the synonym table (Tables 1, 4, 5: mean ± std of ConsistSyn over seeds,
// CV, NI against a baseline) and the lambda sweep (accuracy and CV against lambda). Accuracies carry their
// 95% intervals (lib/interval.ts): Wilson over the test items for one run, Student-t over runs or seeds.
import type { ExperimentResult, PayloadOf } from '../../api/types';
import { cellInterval, tInterval, wilson, type Bounds, type Interval } from '../../lib/interval';

export type CarmaEval = PayloadOf<'carma_eval'>;
export type CapCurve = PayloadOf<'cap_curve'>;
export type SynonymConsistency = PayloadOf<'synonym_consistency'>;
export type Variant = CarmaEval['variant'];
export type CapProtocol = CapCurve['protocol'];
/** A protocol, or the paper's Figure 2 view: the mean over the protocols present. */
export type ProtocolChoice = CapProtocol | 'average';

type Row = Pick<ExperimentResult, 'run_id' | 'payload'>;

/** ConsistSyn is a percentage */
const PERCENT: Bounds = [0, 100];

export const SYNONYM_CAPTION =
  '[lo, hi]: 95% Student-t interval of the mean ConsistSyn over the seeds (none for one seed); the seeds draw the synonym replacements';

export const VARIANT_ORDER: readonly Variant[] = ['original', 'ft', 'carma'];
const VARIANT_NAME: Record<Variant, string> = { original: 'Org', ft: 'FT', carma: 'CARMA' };

/** The records of one result kind among an experiment's results, with their run ids. */
export function recordsOf<K extends 'carma_eval' | 'cap_curve' | 'synonym_consistency'>(
  results: readonly Row[],
  kind: K,
): { run_id: number; payload: PayloadOf<K> }[] {
  return results.flatMap((r) => (r.payload.kind === kind ? [{ run_id: r.run_id, payload: r.payload as PayloadOf<K> }] : []));
}

/** "Org", "FT", "CARMA" and, for CARMA, its lambda: "CARMA λ=0.2". */
export function variantLabel(variant: Variant, lambda: number | null | undefined): string {
  return variant === 'carma' && lambda !== null && lambda !== undefined ? `${VARIANT_NAME[variant]} λ=${lambda}` : VARIANT_NAME[variant];
}

function variantRank(variant: Variant): number {
  return VARIANT_ORDER.indexOf(variant);
}

export interface CapSeries {
  label: string;
  variant: Variant;
  lambda: number | null;
  /** [normalised depth, accuracy], depth ascending */
  points: [number, number][];
  /** accuracy of the same items without CAP */
  clean: number;
  /** 95% Wilson interval of each point over the curve's items: only for a line of one record (else null) */
  ci: (Interval | null)[];
  /** test items of a one-record line; null for a line averaged over records (protocols, runs) */
  items: number | null;
}

/**
 * One line per (variant, lambda): accuracy at each normalised depth for the chosen protocol, or the mean
 * over protocols ('average', as Figure 2). Runs that share a line (seeds, models of one depth grid) are
 * averaged point by point.
 */
export function capSeries(results: readonly Row[], protocol: ProtocolChoice): CapSeries[] {
  const groups = new Map<string, { variant: Variant; lambda: number | null; sums: Map<number, [number, number]>; clean: number[]; items: number[] }>();
  for (const { payload } of recordsOf(results, 'cap_curve')) {
    if (protocol !== 'average' && payload.protocol !== protocol) continue;
    const label = variantLabel(payload.variant, payload.lambda);
    const g = groups.get(label) ?? { variant: payload.variant, lambda: payload.lambda ?? null, sums: new Map<number, [number, number]>(), clean: [] as number[], items: [] as number[] };
    for (const p of payload.points) {
      const depth = Math.round(p.depth * 1e6) / 1e6;
      const [sum, n] = g.sums.get(depth) ?? [0, 0];
      g.sums.set(depth, [sum + p.accuracy, n + 1]);
    }
    g.clean.push(payload.clean_acc);
    g.items.push(payload.items);
    groups.set(label, g);
  }
  return [...groups.entries()]
    .map(([label, g]) => {
      const points = [...g.sums.entries()].sort((a, b) => a[0] - b[0]).map(([x, [sum, n]]) => [x, sum / n] as [number, number]);
      const items = g.items.length === 1 ? g.items[0]! : null;
      return {
        label,
        variant: g.variant,
        lambda: g.lambda,
        points,
        clean: g.clean.reduce((a, b) => a + b, 0) / g.clean.length,
        ci: points.map(([, y]) => wilson(y, items)),
        items,
      };
    })
    .sort((a, b) => variantRank(a.variant) - variantRank(b.variant) || (a.lambda ?? 0) - (b.lambda ?? 0));
}

/** The protocols present among the cap_curve records, in the order mean, max, sum. */
export function capProtocols(results: readonly Row[]): CapProtocol[] {
  const present = new Set(recordsOf(results, 'cap_curve').map((r) => r.payload.protocol));
  return (['mean', 'max', 'sum'] as const).filter((p) => present.has(p));
}

export type Baseline = 'ft' | 'original';

export interface SynonymRow {
  model: string;
  task: CarmaEval['task'];
  variant: Variant;
  label: string;
  lambda: number | null;
  rate: number;
  /** mean ConsistSyn over seeds (percent), its std over seeds, CV = std / mean */
  mean: number;
  std: number;
  cv: number;
  seeds: number;
  /** 95% Student-t interval of the mean ConsistSyn over the seeds (percent); null for one seed */
  ci: Interval | null;
  /** normalised improvement over the baseline's ConsistSyn at the same model, task and rate (percent) */
  ni: number | null;
  runId: number;
}

/**
 * Rows of Tables 1, 4 and 5: by model, then rate, then variant (Org, FT, CARMA by lambda). NI (eq. 14) is
 * against the chosen baseline's row of the same model, task and rate; the baseline's own NI is null.
 */
export function synonymRows(results: readonly Row[], baseline: Baseline): SynonymRow[] {
  const rows: SynonymRow[] = recordsOf(results, 'synonym_consistency').map(({ run_id, payload: p }) => ({
    model: p.model,
    task: p.task,
    variant: p.variant,
    label: variantLabel(p.variant, p.lambda),
    lambda: p.lambda ?? null,
    rate: p.rate,
    mean: p.mean,
    std: p.std,
    cv: p.cv,
    seeds: p.seeds.length,
    ci: tInterval(p.consist_syn, PERCENT),
    ni: null,
    runId: run_id,
  }));
  for (const row of rows) {
    const base = rows.find((b) => b.variant === baseline && b.model === row.model && b.task === row.task && b.rate === row.rate);
    if (base && row !== base && base.mean !== 0) row.ni = normalisedImprovement(row.mean, base.mean);
  }
  return rows.sort(
    (a, b) =>
      a.model.localeCompare(b.model) ||
      a.task.localeCompare(b.task) ||
      a.rate - b.rate ||
      variantRank(b.variant) - variantRank(a.variant) ||
      (a.lambda ?? 0) - (b.lambda ?? 0) ||
      a.runId - b.runId,
  );
}

/** NI = (CS_model - CS_baseline) / CS_baseline x 100 (paper 003, appendix B.4, eq. 14). */
export function normalisedImprovement(model: number, baseline: number): number {
  return ((model - baseline) / baseline) * 100;
}

/** "62.86 ± 1.20" */
export function meanStd(mean: number, std: number, digits = 2): string {
  return `${mean.toFixed(digits)} ± ${std.toFixed(digits)}`;
}

export interface LambdaPoint {
  lambda: number;
  testAcc: number | null;
  /** 95% interval of testAcc: Wilson over the test items for one run, Student-t over several runs */
  testCi: Interval | null;
  /** CV of ConsistSyn per synonym rate, when the run measured it */
  cv: Record<string, number>;
  runIds: number[];
}

export interface LambdaSweep {
  points: LambdaPoint[];
  rates: number[];
  /** the original model's test accuracy, drawn as a reference line */
  original: number | null;
  /** test items of the runs (for the caption) */
  testSizes: number[];
}

/** Test accuracy and CV against lambda (FT is lambda 0); runs at the same lambda are averaged. */
export function lambdaSweep(results: readonly Row[]): LambdaSweep {
  const acc = new Map<number, number[]>();
  const sizes = new Map<number, number[]>();
  const cv = new Map<number, Map<string, number[]>>();
  const runs = new Map<number, Set<number>>();
  const originals: number[] = [];
  const add = (lambda: number, runId: number) => runs.set(lambda, (runs.get(lambda) ?? new Set()).add(runId));
  for (const { run_id, payload } of recordsOf(results, 'carma_eval')) {
    if (payload.lambda === null || payload.lambda === undefined) {
      originals.push(payload.test_acc);
      continue;
    }
    acc.set(payload.lambda, [...(acc.get(payload.lambda) ?? []), payload.test_acc]);
    sizes.set(payload.lambda, [...(sizes.get(payload.lambda) ?? []), payload.test_size]);
    add(payload.lambda, run_id);
  }
  const rates = new Set<number>();
  for (const { run_id, payload } of recordsOf(results, 'synonym_consistency')) {
    if (payload.lambda === null || payload.lambda === undefined) continue;
    rates.add(payload.rate);
    const byRate = cv.get(payload.lambda) ?? new Map<string, number[]>();
    byRate.set(String(payload.rate), [...(byRate.get(String(payload.rate)) ?? []), payload.cv]);
    cv.set(payload.lambda, byRate);
    add(payload.lambda, run_id);
  }
  const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
  const lambdas = [...new Set([...acc.keys(), ...cv.keys()])].sort((a, b) => a - b);
  return {
    points: lambdas.map((lambda) => ({
      lambda,
      testAcc: acc.has(lambda) ? mean(acc.get(lambda)!) : null,
      testCi: acc.has(lambda) ? cellInterval(acc.get(lambda)!, sizes.get(lambda)!) : null,
      cv: Object.fromEntries([...(cv.get(lambda) ?? new Map<string, number[]>()).entries()].map(([r, xs]) => [r, mean(xs)])),
      runIds: [...(runs.get(lambda) ?? [])].sort((a, b) => a - b),
    })),
    rates: [...rates].sort((a, b) => a - b),
    original: originals.length ? mean(originals) : null,
    testSizes: [...sizes.values()].flat(),
  };
}
