// Small texts of the run page and the activity feed, kept pure so they are tested on their own.
import type { Run } from '../api/types';
import { isFinished } from './runStatus';

/**
 * The progress message to show beside the bar: the worker's last message is current only while the run
 * runs; once finished (a failed run's last message is often "training") it is shown as the last one.
 */
export function progressNote(run: Pick<Run, 'status'>, message: string | null | undefined): string | null {
  if (!message) return null;
  if (run.status === 'running') return message;
  if (isFinished(run.status)) return `last message: ${message}`;
  return null; // queued again after a retry: the old attempt's message is not news
}

/**
 * What became of a cancel request: a cancel that arrives in a run's last seconds may lose the race, and
 * the run ends succeeded (or failed) with `cancel_requested` still set; the page says so rather than
 * leaving the click unexplained. null when there is nothing to say.
 */
export function cancelNote(run: Pick<Run, 'status' | 'cancel_requested'>): string | null {
  if (!run.cancel_requested) return null;
  if (run.status === 'cancelled') return null; // the chip says it
  if (!isFinished(run.status)) return 'cancel requested';
  return `${run.status} before the cancel took effect`;
}

/**
 * The activity feed's line: the API's message may already begin with its actor ("admin commented on
 * ..."); the actor is then not written twice.
 */
export function activityLine(actor: string | null | undefined, message: string): { actor: string | null; message: string } {
  const who = actor ?? null;
  if (who && (message === who || message.startsWith(`${who} `))) return { actor: who, message: message.slice(who.length).trimStart() };
  return { actor: who ?? 'system', message };
}
