// @vitest-environment jsdom
// The Examples tab's table of rows and its diff of two runs; long values folded and
// wrapped, the diff's rule (fields that define a change, a tolerance) chosen above it.
import { MantineProvider } from '@mantine/core';
import { act } from 'react';
import { createRoot } from 'react-dom/client';
import { MemoryRouter } from 'react-router';
import { expect, it, vi } from 'vitest';
import type { ExampleDiff, ExamplePeer, ExampleRow } from '../../api/types';
import { DEFAULT_RULE, type DiffRule } from '../../lib/exampleDiff';
import { DiffRuleControls } from './DiffRuleControls';
import { DiffPicker, ExampleDiffList, ExampleRowsTable } from './ExamplesPanel';
import { testContainer } from '../../test/dom';

(globalThis as { IS_REACT_ACT_ENVIRONMENT?: boolean }).IS_REACT_ACT_ENVIRONMENT = true;

const dom = testContainer();

function show(node: React.ReactNode) {
  act(() => {
    dom.root = createRoot(dom.element);
    dom.root.render(
      <MantineProvider env="test">
        <MemoryRouter>{node}</MemoryRouter>
      </MantineProvider>,
    );
  });
}

it('shows a row per example with its idx, key and data fields as columns', () => {
  const rows: ExampleRow[] = [
    { idx: 0, key: 'item-0', data: { reply: 'yes', points: [1, 0] } },
    { idx: 1, key: 'item-1', data: { reply: 'no', topic: 'dogs' } },
  ];
  show(<ExampleRowsTable rows={rows} />);
  const header = [...dom.element.querySelectorAll('thead th')].map((th) => th.textContent);
  expect(header).toEqual(['#', 'key', 'reply', 'points', 'topic']);
  const cells = [...dom.element.querySelectorAll('tbody tr')].map((tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent));
  expect(cells).toEqual([
    ['0', 'item-0', 'yes', '[1,0]', ''],
    ['1', 'item-1', 'no', '', 'dogs'],
  ]);
});

it('shows both runs of a changed item side by side, the differing fields marked, and one-sided items', () => {
  const items: ExampleDiff[] = [
    {
      key: 'item-5',
      change: 'changed',
      run: { idx: 5, key: 'item-5', data: { prediction: 'cat', gold: 'dog' } },
      other: { idx: 9, key: 'item-5', data: { prediction: 'dog', gold: 'dog' } },
      differing: ['prediction'],
    },
    { key: 'item-8', change: 'only_other', run: null, other: { idx: 8, key: 'item-8', data: { prediction: 'eel' } }, differing: [] },
  ];
  show(<ExampleDiffList items={items} runId={3} otherId={4} />);
  const [changed, oneSided] = [...dom.element.querySelectorAll('[data-testid="example-diff-item"]')];
  expect(changed!.textContent).toContain('changed');
  const mine = changed!.querySelector('[data-testid="diff-run"]')!;
  const theirs = changed!.querySelector('[data-testid="diff-other"]')!;
  expect(mine.textContent).toContain('run 3 · row 5');
  expect(mine.querySelector('[data-field="prediction"]')!.textContent).toBe('prediction: cat');
  expect(theirs.querySelector('[data-field="prediction"]')!.textContent).toBe('prediction: dog');
  expect(mine.querySelector('[data-field="prediction"]')!.getAttribute('data-changed')).toBe('true');
  expect(mine.querySelector('[data-field="gold"]')!.getAttribute('data-changed')).toBeNull();
  expect(oneSided!.textContent).toContain('only in the other run');
  expect(oneSided!.querySelector('[data-testid="diff-run"]')!.textContent).toContain('not in this run');
  expect(oneSided!.querySelector('[data-testid="diff-other"]')!.textContent).toContain('prediction: eel');
});

const PEERS: ExamplePeer[] = [
  { id: 12, index: 1, name: 'lr 0.1', status: 'succeeded', rows: 60 },
  { id: 15, index: 4, name: null, status: 'running', rows: 31 },
];

function type(input: HTMLInputElement, value: string) {
  // React tracks the input's value: set it through the prototype's setter, then fire the event it listens to
  const setter = Object.getOwnPropertyDescriptor(HTMLInputElement.prototype, 'value')!.set!;
  act(() => {
    setter.call(input, value);
    input.dispatchEvent(new Event('input', { bubbles: true }));
  });
}

function peerInput(): HTMLInputElement {
  return dom.element.querySelector<HTMLInputElement>('input[data-testid="example-peer"]')!;
}

it("offers the experiment's other runs with the table by name, id and status, and compares the one chosen", () => {
  const onCompare = vi.fn();
  show(<DiffPicker table="predictions" peers={PEERS} other={null} onCompare={onCompare} />);
  act(() => peerInput().click());
  const options = [...document.querySelectorAll('[role="option"]')];
  expect(options.map((o) => o.textContent)).toEqual([
    'lr 0.1 (run 12) · #2 · succeeded · 60 rows',
    'run 15 · #5 · running · 31 rows',
  ]);
  act(() => (options[1] as HTMLElement).click());
  expect(onCompare).toHaveBeenCalledWith(15);
  expect(onCompare).toHaveBeenCalledTimes(1);
});

it('shows the run compared now in the select, and narrows the runs by what is typed in it', () => {
  show(<DiffPicker table="predictions" peers={PEERS} other={12} onCompare={() => {}} />);
  expect(peerInput().value).toBe('lr 0.1 (run 12) · #2 · succeeded · 60 rows');
  act(() => peerInput().click());
  type(peerInput(), 'running');
  expect([...document.querySelectorAll('[role="option"]')].map((o) => o.textContent)).toEqual([
    'run 15 · #5 · running · 31 rows',
  ]);
});

it("keeps the typed run id for a run of another experiment, and says when the experiment has no other run", () => {
  const onCompare = vi.fn();
  show(<DiffPicker table="windows" peers={[]} other={null} onCompare={onCompare} />);
  expect(peerInput()).toBeNull();
  expect(dom.element.querySelector('[data-testid="example-no-peers"]')!.textContent).toBe(
    'No other run of this experiment has windows.',
  );
  const typed = dom.element.querySelector<HTMLInputElement>('[data-testid="example-other"]')!;
  const compare = dom.element.querySelector<HTMLButtonElement>('[data-testid="example-compare"]')!;
  type(typed, 'run x');
  expect(compare.disabled).toBe(true);
  expect(dom.element.textContent).toContain('a run id');
  type(typed, 'run 904');
  expect(compare.disabled).toBe(false);
  act(() => compare.click());
  expect(onCompare).toHaveBeenCalledWith(904);
});

it('says the runs are loading until they come', () => {
  show(<DiffPicker table="predictions" peers={undefined} other={null} onCompare={() => {}} />);
  expect(dom.element.textContent).toContain("Loading this experiment's runs");
  expect(dom.element.querySelector('[data-testid="example-other"]')).not.toBeNull();
});

// a ReasonFormer row's routing: 3 steps x 8 skills, ~900 characters of JSON without a space
const ROUTING = [1, 2, 3].map((step) => ({
  step,
  skills: ['sort', 'reverse'],
  probs: Object.fromEntries(['sort', 'reverse', 'copy', 'count', 'max', 'min', 'sum', 'last'].map((s, i) => [s, 0.1234 + i / 100])),
  stop_gate: 0.0421,
}));

it('folds a long value to its start with a toggle that unfolds it as indented JSON, and wraps it anywhere', () => {
  const items: ExampleDiff[] = [
    {
      key: 'sort/3',
      change: 'changed',
      run: { idx: 3, key: 'sort/3', data: { prediction: 'a b c', correct: true, routing: ROUTING } },
      other: { idx: 3, key: 'sort/3', data: { prediction: 'c b a', correct: false, routing: ROUTING } },
      differing: ['prediction', 'correct'],
    },
  ];
  show(<ExampleDiffList items={items} runId={3} otherId={4} />);
  const routing = dom.element.querySelector('[data-testid="diff-run"] [data-field="routing"]') as HTMLElement;
  const folded = routing.querySelector('[data-testid="value-folded"]') as HTMLElement;
  expect(folded.textContent!.startsWith(JSON.stringify(ROUTING).slice(0, 200))).toBe(true);
  expect(folded.textContent).toContain('…more');
  expect(folded.style.overflowWrap).toBe('anywhere');
  expect(routing.style.overflowWrap).toBe('anywhere');
  expect(routing.querySelector('[data-testid="value-full"]')).toBeNull();
  act(() => (routing.querySelector('[data-testid="value-more"]') as HTMLElement).click());
  const full = routing.querySelector('[data-testid="value-full"]') as HTMLElement;
  expect(full.textContent).toBe(JSON.stringify(ROUTING, null, 2));
  expect(full.style.whiteSpace).toBe('pre-wrap');
  act(() => (routing.querySelector('[data-testid="value-less"]') as HTMLElement).click());
  expect(routing.querySelector('[data-testid="value-full"]')).toBeNull();
  // short values are shown whole, with no toggle
  const prediction = dom.element.querySelector('[data-testid="diff-run"] [data-field="prediction"]')!;
  expect(prediction.textContent).toBe('prediction: a b c');
  expect(prediction.querySelector('[data-testid="value-more"]')).toBeNull();
});

it('folds a long cell of the rows table too', () => {
  show(<ExampleRowsTable rows={[{ idx: 0, key: 'sort/0', data: { prediction: 'x', routing: ROUTING } }]} />);
  const cells = dom.element.querySelectorAll('tbody td');
  expect(cells[3]!.querySelector('[data-testid="value-more"]')).not.toBeNull();
  expect((cells[3] as HTMLElement).style.overflowWrap).toBe('anywhere');
});

it("marks the rule's fields that differ as changed, and other differing fields apart", () => {
  const items: ExampleDiff[] = [
    {
      key: 'sort/1',
      change: 'changed',
      run: { idx: 1, key: 'sort/1', data: { prediction: 'a', correct: true, routing: [0.5] } },
      other: { idx: 1, key: 'sort/1', data: { prediction: 'b', correct: true, routing: [0.6] } },
      differing: ['prediction', 'routing'],
    },
  ];
  show(<ExampleDiffList items={items} runId={3} otherId={4} compared={['prediction', 'correct']} />);
  const field = (f: string) => dom.element.querySelector(`[data-testid="diff-run"] [data-field="${f}"]`)!;
  expect(field('prediction').getAttribute('data-changed')).toBe('true');
  expect(field('routing').getAttribute('data-changed')).toBeNull();
  expect(field('routing').getAttribute('data-differs')).toBe('true');
  expect(field('correct').getAttribute('data-differs')).toBeNull();
  expect(field('routing').getAttribute('title')).toContain('not one of the fields that define a change');
});

it('chooses the fields that define a change and the tolerances, refusing a bad tolerance', () => {
  const onChange = vi.fn((_next: DiffRule) => {});
  show(<DiffRuleControls rule={DEFAULT_RULE} fields={['prediction', 'correct', 'routing']} onChange={onChange} />);
  const box = (label: string) => dom.element.querySelector<HTMLInputElement>(`[data-testid="diff-fields"] input[value="${label}"]`)!;
  expect(dom.element.textContent).toContain('none ticked: any field');
  act(() => box('correct').click());
  expect(onChange).toHaveBeenLastCalledWith({ ...DEFAULT_RULE, fields: ['correct'] });
  const rtol = dom.element.querySelector<HTMLInputElement>('input[data-testid="diff-rtol"]')!;
  expect(rtol.value).toBe('0.000001');
  type(rtol, '-1');
  expect(dom.element.textContent).toContain('a number from 0 to 1');
  act(() => rtol.dispatchEvent(new FocusEvent('focusout', { bubbles: true })));
  expect(onChange).toHaveBeenCalledTimes(1); // nothing applied
  type(rtol, '1e-2');
  act(() => rtol.dispatchEvent(new KeyboardEvent('keydown', { key: 'Enter', bubbles: true })));
  expect(onChange).toHaveBeenLastCalledWith({ ...DEFAULT_RULE, rel: 0.01 });
  const atol = dom.element.querySelector<HTMLInputElement>('input[data-testid="diff-atol"]')!;
  type(atol, '0.5');
  act(() => atol.dispatchEvent(new FocusEvent('focusout', { bubbles: true })));
  expect(onChange).toHaveBeenLastCalledWith({ ...DEFAULT_RULE, abs: 0.5 });
});

it('lists a chosen field the rows lack so it can be unticked, and resets to the default', () => {
  const onChange = vi.fn();
  show(<DiffRuleControls rule={{ fields: ['gone'], rel: 0.01, abs: 0 }} fields={['prediction']} onChange={onChange} />);
  const boxes = [...dom.element.querySelectorAll<HTMLInputElement>('[data-testid="diff-fields"] input')];
  expect(boxes.map((b) => [b.value, b.checked])).toEqual([
    ['prediction', false],
    ['gone', true],
  ]);
  act(() => dom.element.querySelector<HTMLButtonElement>('[data-testid="diff-rule-reset"]')!.click());
  expect(onChange).toHaveBeenCalledWith(DEFAULT_RULE);
});
