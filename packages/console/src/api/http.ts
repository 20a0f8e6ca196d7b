/**
 * A refusal or failure of a call to the service: the HTTP status (0 when it could not be reached)
 * and the problem document's stable `code` and `detail` (RFC 9457), which the console shows.
 */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    readonly detail: string,
  ) {
    super(detail || code);
    this.name = 'ApiError';
  }
}

/** What a call may carry besides its method and path. */
export interface CallOptions {
  /** The project the call acts on (`Tessera-Project`), for the integrator API. */
  project?: string | undefined;
  body?: unknown;
  query?: Record<string, string | number | boolean | undefined | null>;
  /** `text`: the answer's body as text (CSV), instead of JSON. */
  as?: 'json' | 'text';
  signal?: AbortSignal;
}

/** Makes the calls of the console: the console user's access token as Bearer, JSON in and out. */
export interface Http {
  call<T>(method: string, path: string, options?: CallOptions): Promise<T>;
}

export function createHttp(options: {
  /** The service's base URL (the console is served by it: usually the page's own origin). */
  issuer: string;
  /** The signed-in console user's access token, or null once signed out. */
  accessToken(): Promise<string | null>;
  /** Called on a 401: the console's session has ended. */
  onUnauthorized(): void;
}): Http {
  const base = options.issuer.replace(/\/+$/, '');
  return {
    async call<T>(method: string, path: string, call: CallOptions = {}): Promise<T> {
      const token = await options.accessToken();
      if (!token) {
        options.onUnauthorized();
        throw new ApiError(401, 'unauthorized', 'signed out');
      }
      const url = new URL(`${base}${path}`);
      for (const [name, value] of Object.entries(call.query ?? {}))
        if (value !== undefined && value !== null && value !== '') url.searchParams.set(name, String(value));
      const headers: Record<string, string> = {
        authorization: `Bearer ${token}`,
        accept: call.as === 'text' ? 'text/csv' : 'application/json',
      };
      if (call.project) headers['tessera-project'] = call.project;
      if (call.body !== undefined) headers['content-type'] = 'application/json';
      let response: Response;
      try {
        response = await fetch(url, {
          method,
          headers,
          credentials: 'omit',
          ...(call.body !== undefined && { body: JSON.stringify(call.body) }),
          ...(call.signal && { signal: call.signal }),
        });
      } catch (error) {
        if ((error as Error).name === 'AbortError') throw error;
        throw new ApiError(0, 'network_error', 'the service could not be reached');
      }
      if (response.status === 401) options.onUnauthorized();
      if (!response.ok) throw await problemOf(response);
      if (response.status === 204) return undefined as T;
      return (call.as === 'text' ? await response.text() : await response.json()) as T;
    },
  };
}

async function problemOf(response: Response): Promise<ApiError> {
  let body: { code?: unknown; detail?: unknown; error?: unknown; error_description?: unknown } = {};
  try {
    body = (await response.json()) as typeof body;
  } catch {}
  const code = typeof body.code === 'string' ? body.code : typeof body.error === 'string' ? body.error : '';
  const detail =
    typeof body.detail === 'string'
      ? body.detail
      : typeof body.error_description === 'string'
        ? body.error_description
        : '';
  return new ApiError(response.status, code || `http_${response.status}`, detail);
}
