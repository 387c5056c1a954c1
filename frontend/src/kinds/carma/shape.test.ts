import { describe, expect, it } from 'vitest';
import type { ExperimentResult } from '../../api/types';
import { capProtocols, capSeries, lambdaSweep, meanStd, normalisedImprovement, recordsOf, synonymRows, variantLabel, type CapCurve, type CarmaEval, type SynonymConsistency, type Variant } from './shape';

type Row = Pick<ExperimentResult, 'run_id' | 'payload'>;
const lam = (variant: Variant, lambda?: number) => (variant === 'original' ? null : variant === 'ft' ? 0 : (lambda ?? 0.2));

const curve = (run_id: number, variant: Variant, protocol: CapCurve['protocol'], accs: number[], lambda?: number): Row => ({
  run_id,
  payload: {
    kind: 'cap_curve', variant, model: 'smollm2-135m', task: 'idm', lambda: lam(variant, lambda), protocol, num_layers: 3, items: 10, clean_acc: 0.5,
    points: accs.map((accuracy, layer) => ({ layer, depth: layer / (accs.length - 1), accuracy })),
  },
});

const syn = (run_id: number, variant: Variant, rate: number, mean: number, std: number, lambda?: number): Row => ({
  run_id,
  payload: {
    kind: 'synonym_consistency', variant, model: 'smollm2-135m', task: 'idm', lambda: lam(variant, lambda), rate, source: 'wordnet',
    seeds: [0, 1, 2, 3, 4], consist_syn: [mean, mean, mean, mean, mean], mean, std, cv: std / mean, correct_before: 20, changed: [5, 5, 5, 5, 5],
  } satisfies SynonymConsistency,
});

const evalRow = (run_id: number, variant: Variant, test_acc: number, lambda?: number): Row => ({
  run_id,
  payload: {
    kind: 'carma_eval', variant, model: 'm', task: 'idm', lambda: lam(variant, lambda), gamma: null, eta: null, layers: null, num_layers: 30,
    train_size: 8, validation_size: 1, test_size: 1, steps: 3, best_step: null, validation_acc: 0, test_acc, test_loss: 1, step_seconds: null,
  } satisfies CarmaEval,
});

describe('variantLabel', () => {
  it('names the paper versions and CARMA with its lambda', () => {
    expect([variantLabel('original', null), variantLabel('ft', 0), variantLabel('carma', 0.3)]).toEqual(['Org', 'FT', 'CARMA λ=0.3']);
  });
});

describe('capSeries', () => {
  const results = [
    curve(1, 'carma', 'mean', [0.2, 0.4, 0.6]),
    curve(1, 'carma', 'max', [0.0, 0.2, 0.4]),
    curve(2, 'original', 'mean', [0.1, 0.1, 0.5]),
    evalRow(3, 'ft', 0.5),
  ];

  it('draws one line per variant, original first, depth ascending', () => {
    const series = capSeries(results, 'mean');
    expect(series.map((s) => s.label)).toEqual(['Org', 'CARMA λ=0.2']);
    expect(series[1]!.points).toEqual([[0, 0.2], [0.5, 0.4], [1, 0.6]]);
    expect(series[1]!.clean).toBe(0.5);
  });

  it('averages the protocols for Figure 2', () => {
    const carma = capSeries(results, 'average').find((s) => s.variant === 'carma')!;
    expect(carma.points.map(([, y]) => y)).toEqual([0.1, 0.30000000000000004, 0.5]);
    expect(capProtocols(results)).toEqual(['mean', 'max']);
  });

  it('keeps only the records of the kind asked for', () => {
    expect(recordsOf(results, 'carma_eval')).toHaveLength(1);
  });
});

describe('synonymRows', () => {
  const results = [
    syn(1, 'carma', 0.25, 62.86, 0.93),
    syn(2, 'ft', 0.25, 62.22, 1.8),
    syn(3, 'original', 0.25, 52.47, 1.84),
    syn(1, 'carma', 0.4, 49.05, 1.46),
    syn(2, 'ft', 0.4, 48.31, 0.92),
  ];

  it('orders rows as Table 4: by rate, then CARMA, FT, Org', () => {
    const rows = synonymRows(results, 'ft');
    expect(rows.map((r) => [r.rate, r.label])).toEqual([
      [0.25, 'CARMA λ=0.2'], [0.25, 'FT'], [0.25, 'Org'], [0.4, 'CARMA λ=0.2'], [0.4, 'FT'],
    ]);
  });

  it('computes NI (eq. 14) against the chosen baseline at the same rate', () => {
    const rows = synonymRows(results, 'ft');
    expect(rows[0]!.ni).toBeCloseTo(((62.86 - 62.22) / 62.22) * 100);
    expect(rows[1]!.ni).toBeNull(); // the baseline itself
    const vsOrg = synonymRows(results, 'original');
    expect(vsOrg[0]!.ni).toBeCloseTo(((62.86 - 52.47) / 52.47) * 100);
    expect(vsOrg.find((r) => r.rate === 0.4)!.ni).toBeNull(); // no Org row at 40%
    expect(normalisedImprovement(75, 60)).toBeCloseTo(25);
    expect(meanStd(62.856, 0.931)).toBe('62.86 ± 0.93');
  });
});

describe('lambdaSweep', () => {
  it('puts accuracy and CV per rate against lambda, FT at 0, original as a reference', () => {
    const sweep = lambdaSweep([
      evalRow(1, 'ft', 0.3),
      evalRow(2, 'carma', 0.4, 0.2),
      evalRow(3, 'carma', 0.2, 0.2),
      evalRow(4, 'original', 0.1),
      syn(1, 'ft', 0.25, 50, 5),
      syn(2, 'carma', 0.25, 60, 3, 0.2),
    ]);
    expect(sweep.points.map((p) => [p.lambda, p.testAcc])).toEqual([[0, 0.3], [0.2, 0.30000000000000004]]);
    expect(sweep.points[0]!.cv).toEqual({ '0.25': 0.1 });
    expect(sweep.points[1]!.runIds).toEqual([2, 3]);
    expect(sweep.rates).toEqual([0.25]);
    expect(sweep.original).toBe(0.1);
  });
});

describe('95% intervals of the CARMA accuracies', () => {
  it('gives a one-record CAP line the Wilson interval of each point over its items, an averaged line none', () => {
    const results = [curve(1, 'carma', 'mean', [0.2, 0.4, 0.6]), curve(1, 'carma', 'max', [0.0, 0.2, 0.4])];
    const [one] = capSeries(results, 'mean');
    expect(one!.items).toBe(10);
    expect(one!.ci[0]!.method).toBe('wilson');
    // 2 of 10: Wilson [0.056682, 0.509838] (by hand: centre (0.2 + z²/20) / (1 + z²/10))
    expect(one!.ci[0]!.lo).toBeCloseTo(0.056682, 5);
    expect(one!.ci[0]!.hi).toBeCloseTo(0.509838, 5);
    const [averaged] = capSeries(results, 'average');
    expect(averaged!.items).toBeNull();
    expect(averaged!.ci).toEqual([null, null, null]);
  });

  it('gives a lambda of one run the Wilson interval over its test items and of several the t interval', () => {
    const sized = (run: number, acc: number, lambda: number) => {
      const row = evalRow(run, 'carma', acc, lambda);
      return { ...row, payload: { ...row.payload, test_size: 256 } } as Row;
    };
    const sweep = lambdaSweep([sized(1, 205 / 256, 0.1), sized(2, 0.5, 0.2), sized(3, 0.6, 0.2), sized(4, 0.7, 0.2)]);
    expect(sweep.points[0]!.testCi!.lo).toBeCloseTo(0.747567, 5);
    expect(sweep.points[1]!.testCi).toMatchObject({ method: 't' });
    expect(sweep.points[1]!.testCi!.lo).toBeCloseTo(0.351586, 5);
    expect(sweep.testSizes).toEqual([256, 256, 256, 256]);
  });

  it('gives ConsistSyn the t interval over its seeds, in percent', () => {
    const row = syn(1, 'carma', 0.25, 60, 0);
    const spread = { ...row, payload: { ...row.payload, consist_syn: [50, 60, 70], seeds: [0, 1, 2] } } as Row;
    const [r] = synonymRows([spread], 'ft');
    expect(r!.ci!.lo).toBeCloseTo(60 - 4.302653 * 10 / Math.sqrt(3), 3);
    expect(r!.ci!.hi).toBeCloseTo(60 + 4.302653 * 10 / Math.sqrt(3), 3);
    const one = { ...row, payload: { ...row.payload, consist_syn: [60], seeds: [0] } } as Row;
    expect(synonymRows([one], 'ft')[0]!.ci).toBeNull();
  });
});
