import type { ServerClock } from '../clock.js';
import { ClientErrorCodes, errorFromAnswer, TesseraClientError } from '../errors.js';

/**
 * The `fetch` the SDK calls: the platform's, or one injected (tests, React Native polyfills).
 *
 * @example
 * ```ts
 * import type { FetchLike } from '@tessera/client';
 *
 * const logged: FetchLike = (input, init) => {
 *   console.debug('tessera →', init?.method ?? 'GET', String(input)); // URLs only, never bodies
 *   return fetch(input, init);
 * };
 * ```
 */
export type FetchLike = (input: string | URL | Request, init?: RequestInit) => Promise<Response>;

export interface CallOptions {
  method?: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  body?: unknown;
  /** An access token, sent as `Authorization: Bearer`. */
  token?: string;
}

/**
 * Calls the Tessera service: JSON in and out, `API_KEY_ID` on every call, errors turned into
 * {@link TesseraClientError}s with the service's stable codes, clock samples taken on the way.
 */
export class Transport {
  constructor(
    private readonly issuer: string,
    private readonly apiKeyId: string,
    private readonly fetchFn: FetchLike,
    private readonly clock: ServerClock,
    private readonly timeoutMs: number,
  ) {}

  async call<T>(path: string, options: CallOptions = {}): Promise<T> {
    const headers: Record<string, string> = { accept: 'application/json', API_KEY_ID: this.apiKeyId };
    if (options.body !== undefined) headers['content-type'] = 'application/json';
    if (options.token) headers.authorization = `Bearer ${options.token}`;
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(), this.timeoutMs);
    let response: Response;
    let text: string;
    try {
      response = await this.fetchFn(`${this.issuer}${path}`, {
        method: options.method ?? 'POST',
        headers,
        body: options.body === undefined ? null : JSON.stringify(options.body),
        signal: controller.signal,
      });
      text = await response.text();
    } catch (cause) {
      const timedOut = controller.signal.aborted;
      throw new TesseraClientError(
        ClientErrorCodes.networkError,
        timedOut ? 'the Tessera service did not answer in time' : 'the Tessera service could not be reached',
        { cause },
      );
    } finally {
      clearTimeout(timer);
    }
    this.clock.observeDateHeader(response.headers.get('date'));
    const body = parseJson(text);
    if (!response.ok) throw errorFromAnswer(response.status, body, pageOrigin());
    return body as T;
  }
}

/** The page's origin in a browser (`location.origin`); undefined in Node and React Native. */
function pageOrigin(): string | undefined {
  const origin = (globalThis as { location?: { origin?: unknown } }).location?.origin;
  return typeof origin === 'string' && origin !== 'null' ? origin : undefined;
}

function parseJson(text: string): unknown {
  if (!text) return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
