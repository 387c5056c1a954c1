// The one HTTP client: typed by the generated src/api/schema.d.ts (openapi-fetch), adds the credential,
// turns every non-2xx into an ApiError and ends the session on any 401. Hooks call `unwrap(api.GET(...))`.
import createClient, { type Middleware } from 'openapi-fetch';
import { authStore } from './auth';
import { ApiError } from './errors';
import type { paths } from './schema';

export const API_PREFIX = '/api/v1';

const authMiddleware: Middleware = {
  onRequest({ request }) {
    const token = authStore.token();
    if (token && !request.headers.has('Authorization')) request.headers.set('Authorization', `Bearer ${token}`);
    return request;
  },
  onResponse({ request, response }) {
    if (response.status === 401 && !request.url.endsWith(`${API_PREFIX}/auth/login`)) authStore.expire();
    return response;
  },
};

export const api = createClient<paths>({ baseUrl: '' });
api.use(authMiddleware);

interface FetchResult<T> {
  data?: T;
  error?: unknown;
  response: Response;
}

/** Resolves to the response body, or throws an ApiError carrying the API's error body. */
export async function unwrap<T>(call: Promise<FetchResult<T>>): Promise<T> {
  const { data, error, response } = await call;
  if (!response.ok) throw await ApiError.from(response, error);
  return data as T;
}

/**
 * URL of a run's event stream. EventSource cannot send headers, so the stream takes a one-minute,
 * one-run read ticket (POST /runs/{id}/read-ticket) in the URL, never the login itself.
 */
export function runEventsUrl(runId: number, ticket: string): string {
  return `${API_PREFIX}/runs/${runId}/events?ticket=${encodeURIComponent(ticket)}`;
}
