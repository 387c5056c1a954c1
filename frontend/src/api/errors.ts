// Every API error body is {detail, code, errors} (docs/api.md "Errors"); ApiError carries it typed.
import type { ErrorItem } from '../lib/apiErrors';

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    readonly detail: string,
    readonly errors: ErrorItem[] = [],
  ) {
    super(`${status} ${code}: ${detail}`);
    this.name = 'ApiError';
  }

  static async from(response: Response, body?: unknown): Promise<ApiError> {
    let parsed = body;
    if (parsed === undefined) {
      try {
        parsed = await response.clone().json();
      } catch {
        parsed = undefined;
      }
    }
    const b = (typeof parsed === 'object' && parsed !== null ? parsed : {}) as { detail?: unknown; code?: unknown; errors?: unknown };
    // FastAPI's own 422 has detail = [{loc, msg, type}]; ours has errors = [...]
    const errors = (Array.isArray(b.errors) ? b.errors : Array.isArray(b.detail) ? b.detail : []) as ErrorItem[];
    const detail = typeof b.detail === 'string' ? b.detail : errors[0]?.msg ?? response.statusText ?? 'request failed';
    const code = typeof b.code === 'string' ? b.code : String(response.status);
    return new ApiError(response.status, code, detail, errors);
  }
}

export function isApiError(e: unknown, status?: number): e is ApiError {
  return e instanceof ApiError && (status === undefined || e.status === status);
}

export function errorMessage(e: unknown): string {
  if (e instanceof ApiError) return e.detail;
  if (e instanceof Error) return e.message;
  return String(e);
}
