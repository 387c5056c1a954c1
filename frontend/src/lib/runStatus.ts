// The run lifecycle's vocabulary, written once (queued -> running -> succeeded | failed | cancelled;
// docs/architecture.md), checked against the API's generated `RunStatus` enum: a status the API adds
// and this list lacks fails `npm run typecheck`.
import type { RunStatus } from '../api/types';

export type { RunStatus };

/** Every status, in lifecycle order (the order of the table's status chips). */
export const RUN_STATUSES = ['queued', 'running', 'succeeded', 'failed', 'cancelled'] as const satisfies readonly RunStatus[];
/** States a run never leaves by itself. */
export const FINISHED_STATUSES = ['succeeded', 'failed', 'cancelled'] as const satisfies readonly RunStatus[];

type Unlisted = Exclude<RunStatus, (typeof RUN_STATUSES)[number]>;
/** `true` only while RUN_STATUSES names every status of the API (otherwise the unlisted ones: a type error). */
export const EVERY_STATUS_LISTED: [Unlisted] extends [never] ? true : Unlisted = true;

export const FINISHED: ReadonlySet<RunStatus> = new Set(FINISHED_STATUSES);

export function isFinished(status: RunStatus): boolean {
  return FINISHED.has(status);
}

/** A queued or running run can be cancelled; a failed or cancelled one retried (the API refuses others). */
export const canCancel = (status: RunStatus): boolean => status === 'queued' || status === 'running';
export const canRetry = (status: RunStatus): boolean => status === 'failed' || status === 'cancelled';

/** Mantine colour of each status's chip. */
export const STATUS_COLOURS: Record<RunStatus, string> = {
  queued: 'gray',
  running: 'blue',
  succeeded: 'green',
  failed: 'red',
  cancelled: 'yellow',
};

export function isRunStatus(value: string): value is RunStatus {
  return (RUN_STATUSES as readonly string[]).includes(value);
}
