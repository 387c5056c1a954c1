// A search box in the query language (docs/api.md "Query language"): the text is the view's query (the
// URL's q, written as typed); the page asks the API once typing pauses (useDebouncedQuery). A query the
// API refuses shows its 422 under the box — the message and a caret under the position it names — while
// the page keeps its last good results. Plain words (no operator) search names; the hint says so.
import { Code, Stack, Text, TextInput } from '@mantine/core';
import { useDebouncedValue } from '@mantine/hooks';
import { isApiError } from '../../api/errors';
import { caretLines, effectiveQuery, isPlainSearch, queryProblem } from '../../lib/runsQuery';

export const QUERY_DEBOUNCE_MS = 350;

/** The query to ask the API: the box's text once it has rested QUERY_DEBOUNCE_MS, plain words made a name search. */
export function useDebouncedQuery(text: string): string | null {
  const [rested] = useDebouncedValue(text, QUERY_DEBOUNCE_MS);
  return effectiveQuery(rested);
}

interface Props {
  value: string;
  onChange: (text: string) => void;
  /** the error of the request made with `sent` (the query the page asked last), if it failed */
  error: unknown;
  /** the query text the failing request carried (the caret is placed in it) */
  sent: string | null;
  label?: string;
  placeholder?: string;
  testId: string;
  width?: number | string;
  /** an expression the hint shows as an example */
  example?: string;
}

export function QueryBox({ value, onChange, error, sent, label = 'Query', placeholder, testId, width = '100%', example = 'kind = "carma" and max(metrics.acc) > 0.9' }: Props) {
  const problem = isApiError(error, 422) ? queryProblem(error.errors, error.detail) : null;
  const caret = problem && sent !== null ? caretLines(sent, problem.position) : null;
  return (
    <Stack gap={4} w={width}>
      <TextInput
        label={label}
        placeholder={placeholder ?? 'status = "succeeded" and params.train.lr >= 0.01, or a name'}
        value={value}
        onChange={(e) => onChange(e.currentTarget.value)}
        error={problem ? true : undefined}
        spellCheck={false}
        styles={{ input: { fontFamily: 'var(--mantine-font-family-monospace)' } }}
        data-testid={testId}
      />
      {problem ? (
        <div role="alert" data-testid={`${testId}-error`}>
          <Text size="xs" c="red">
            {problem.message}
          </Text>
          {caret && (
            <Code block fz="xs" data-testid={`${testId}-caret`}>
              {caret.join('\n')}
            </Code>
          )}
        </div>
      ) : (
        <Text size="xs" c="dimmed" data-testid={`${testId}-hint`}>
          {isPlainSearch(value)
            ? `searching for ${effectiveQuery(value)} (write an expression to filter on other fields)`
            : `the query language: fields, operators (= != < <= > >= in contains exists missing), and / or / not, e.g. ${example}`}
        </Text>
      )}
    </Stack>
  );
}
