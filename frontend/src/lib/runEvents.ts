// A run's server-sent events (`GET /runs/{id}/events`), typed by the OpenAPI document's `RunEvent`:
// `status` carries the run, `progress` its Progress, `metrics` the latest step per key, `end` the final
// status. Decoding and the live state they fold into are pure; hooks/runs.ts useRunEvents listens.
import type { RunEvent, RunEventData, RunEventName } from '../api/types';

export const RUN_EVENT_NAMES = ['status', 'progress', 'metrics', 'end'] as const satisfies readonly RunEventName[];
type Unlisted = Exclude<RunEventName, (typeof RUN_EVENT_NAMES)[number]>;
/** `true` only while RUN_EVENT_NAMES names every event of the API (otherwise the unlisted ones: a type error). */
export const EVERY_EVENT_LISTED: [Unlisted] extends [never] ? true : Unlisted = true;

export function isRunEventName(name: string): name is RunEventName {
  return (RUN_EVENT_NAMES as readonly string[]).includes(name);
}

/**
 * One event from its SSE name and data line, or null when the name is not a run event or the data is
 * not a JSON object. The data's fields are trusted to be the documented ones, as openapi-fetch trusts a
 * JSON response body: the server is typed by the same schema.
 */
export function decodeRunEvent(name: string, data: string): RunEvent | null {
  if (!isRunEventName(name)) return null;
  try {
    const event: RunEvent = { event: name, data: JSON.parse(data) };
    return typeof event.data === 'object' && event.data !== null && !Array.isArray(event.data) ? event : null;
  } catch {
    return null;
  }
}

export interface LiveState {
  /** the latest progress, with the API's ETA (`eta_at`) */
  progress: RunEventData<'progress'> | null;
  /** latest step per metric key, from `metrics` events */
  steps: Record<string, number>;
  connected: boolean;
}

export const NOT_LIVE: LiveState = { progress: null, steps: {}, connected: false };

/** The live state after one event; `status` events change the cached run instead. */
export function applyRunEvent(state: LiveState, event: RunEvent): LiveState {
  switch (event.event) {
    case 'progress':
      return { ...state, progress: event.data };
    case 'metrics':
      return { ...state, steps: { ...state.steps, ...event.data.steps } };
    case 'end':
      return { ...state, connected: false };
    case 'status':
      return state;
  }
}
