import { type AdminAuth, authHeaders, checkAuth } from './auth.js';
import { AdminErrorCodes, errorOfAnswer, TesseraAdminError } from './errors.js';
import { OPERATIONS } from './generated/operations.js';
import type { OperationId, Result } from './operation-types.js';

/**
 * Retries of calls that are safe to repeat: `GET`, `PUT` and `DELETE` (the API has no
 * `Idempotency-Key`, so `POST` and `PATCH` are never sent twice). A call is retried when the service
 * could not be reached, did not answer in time, or answered 429, 502, 503 or 504 — after its
 * `Retry-After` when it gave one (a longer wait than `maxDelay` is not waited for: the error is
 * thrown with its `retryAfter`), otherwise after an exponential backoff with jitter.
 *
 * @example
 * ```ts
 * createTesseraAdmin({ issuer, apiKeyId, apiKeySecret, retry: { retries: 4, maxDelay: 10_000 } });
 * ```
 */
export interface RetryOptions {
  /** Retries after the first attempt (default 2; 0 turns retrying off). */
  retries?: number;
  /** The first backoff in ms, doubled at each retry (default 250). */
  minDelay?: number;
  /** The longest wait in ms, backoff or `Retry-After` (default 5000). */
  maxDelay?: number;
}

/** The options of a transport: where, as whom, and how patiently. */
export interface TransportOptions {
  /** The service's base URL (`TESSERA_ISSUER`), e.g. `https://auth.example.com`. */
  issuer: string;
  auth: AdminAuth;
  /** The fetch to use (default: the global one). */
  fetch?: typeof fetch;
  retry?: RetryOptions;
  /** Milliseconds an attempt may take, answer body included (default 30 000). */
  timeout?: number;
}

/** Per-call options. */
export interface CallOptions {
  /** Aborts the call (and its retries); the promise rejects with the signal's reason. */
  signal?: AbortSignal;
}

/** What a call sends: path parameters, query parameters, a JSON body. */
export interface CallInput {
  path?: Readonly<Record<string, string>>;
  query?: Readonly<Record<string, string | number | boolean | null | undefined>>;
  body?: unknown;
  /** The media type asked for (default `application/json`). */
  accept?: string;
}

const SAFE_TO_REPEAT: ReadonlySet<string> = new Set(['GET', 'PUT', 'DELETE']);
const RETRY_STATUSES: ReadonlySet<number> = new Set([429, 502, 503, 504]);

/** Waits `ms`, or rejects with the signal's reason when it aborts first. */
function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** The base URL without a trailing slash; refuses what is not an http(s) URL. */
function baseUrl(issuer: string): string {
  let url: URL;
  try {
    url = new URL(issuer);
  } catch {
    throw new TypeError('@tessera/admin: issuer must be an absolute URL, e.g. https://auth.example.com');
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:')
    throw new TypeError('@tessera/admin: issuer must be an http(s) URL');
  return `${url.origin}${url.pathname.replace(/\/+$/, '')}`;
}

/** A path template with its parameters filled in (each must be a non-empty string). */
function fillPath(template: string, params: Readonly<Record<string, string>> = {}): string {
  return template.replace(/\{(\w+)\}/g, (_, name: string) => {
    const value = params[name];
    if (typeof value !== 'string' || value.length === 0)
      throw new TypeError(`@tessera/admin: ${name} must be a non-empty string`);
    return encodeURIComponent(value);
  });
}

function queryString(query: CallInput['query'] = {}): string {
  const search = new URLSearchParams();
  for (const [name, value] of Object.entries(query))
    if (value !== undefined && value !== null) search.append(name, String(value));
  const text = search.toString();
  return text ? `?${text}` : '';
}

/**
 * Sends the operations of the OpenAPI document: fills in the path, authenticates, retries what is
 * safe to repeat, and turns every refusal into a {@link TesseraAdminError}.
 */
export class Transport {
  readonly #base: string;
  readonly #auth: AdminAuth;
  readonly #fetch: typeof fetch;
  readonly #retries: number;
  readonly #minDelay: number;
  readonly #maxDelay: number;
  readonly #timeout: number;

  constructor(options: TransportOptions) {
    checkAuth(options.auth);
    this.#base = baseUrl(options.issuer);
    this.#auth = options.auth;
    const given = options.fetch ?? globalThis.fetch;
    if (typeof given !== 'function') throw new TypeError('@tessera/admin: no fetch here; pass options.fetch');
    // Called unbound, a browser's fetch throws "Illegal invocation".
    this.#fetch = (input, init) => given(input, init);
    this.#retries = options.retry?.retries ?? 2;
    this.#minDelay = options.retry?.minDelay ?? 250;
    this.#maxDelay = options.retry?.maxDelay ?? 5000;
    this.#timeout = options.timeout ?? 30_000;
    for (const [name, value] of Object.entries({
      'retry.retries': this.#retries,
      'retry.minDelay': this.#minDelay,
      'retry.maxDelay': this.#maxDelay,
      timeout: this.#timeout,
    }))
      if (!Number.isInteger(value) || value < 0)
        throw new TypeError(`@tessera/admin: ${name} must be a whole number ≥ 0`);
  }

  /** The same transport with another credential (e.g. another console project). */
  withAuth(auth: AdminAuth): Transport {
    return new Transport({
      issuer: this.#base,
      auth,
      fetch: this.#fetch,
      retry: { retries: this.#retries, minDelay: this.#minDelay, maxDelay: this.#maxDelay },
      timeout: this.#timeout,
    });
  }

  /** The credential in use. */
  get auth(): AdminAuth {
    return this.#auth;
  }

  /** Calls an operation of the document by its operationId. */
  async call<Id extends OperationId>(
    id: Id,
    input: CallInput = {},
    options: CallOptions = {},
  ): Promise<Result<Id>> {
    const { method, path } = OPERATIONS[id];
    const url = `${this.#base}${fillPath(path, input.path)}${queryString(input.query)}`;
    const repeatable = SAFE_TO_REPEAT.has(method);
    const accept = input.accept ?? 'application/json';
    for (let attempt = 0; ; attempt++) {
      const retriesLeft = repeatable && attempt < this.#retries;
      const timeout = AbortSignal.timeout(this.#timeout);
      const signal = options.signal ? AbortSignal.any([options.signal, timeout]) : timeout;
      const headers: Record<string, string> = { accept, ...(await authHeaders(this.#auth)) };
      if (input.body !== undefined) headers['content-type'] = 'application/json';
      let response: Response;
      let text: string;
      try {
        response = await this.#fetch(url, {
          method,
          headers,
          ...(input.body !== undefined && { body: JSON.stringify(input.body) }),
          signal,
          credentials: 'omit',
          redirect: 'error',
        });
        text = await response.text();
      } catch (cause) {
        if (options.signal?.aborted) throw options.signal.reason;
        const failure = timeout.aborted
          ? new TesseraAdminError(AdminErrorCodes.timeout, `no answer within ${this.#timeout} ms`, {
              operation: id,
              cause,
            })
          : new TesseraAdminError(AdminErrorCodes.networkError, 'the service could not be reached', {
              operation: id,
              cause,
            });
        if (!retriesLeft) throw failure;
        await sleep(this.#backoff(attempt), options.signal);
        continue;
      }
      if (response.ok) return this.#parse(id, response, text, accept) as Result<Id>;
      const error = errorOfAnswer(id, response.status, response.headers, text);
      if (retriesLeft && RETRY_STATUSES.has(response.status)) {
        const wait = error.retryAfter !== undefined ? error.retryAfter * 1000 : this.#backoff(attempt);
        if (wait <= this.#maxDelay) {
          await sleep(wait, options.signal);
          continue;
        }
      }
      throw error;
    }
  }

  /** Full jitter over an exponential backoff: a random wait up to minDelay·2^attempt, capped. */
  #backoff(attempt: number): number {
    return Math.round(Math.random() * Math.min(this.#maxDelay, this.#minDelay * 2 ** attempt));
  }

  /** The answer as asked for: JSON parsed, another media type (CSV) as text; anything else is refused. */
  #parse(id: OperationId, response: Response, text: string, accept: string): unknown {
    if (response.status === 204 || text === '') return undefined;
    const type = (response.headers.get('content-type') ?? '').split(';')[0]!.trim().toLowerCase();
    const json = accept === 'application/json';
    if (json ? !/^application\/([\w.-]+\+)?json$/.test(type) : type !== accept)
      throw new TesseraAdminError(
        AdminErrorCodes.invalidResponse,
        `the answer is ${type || 'untyped'}, not ${accept}`,
        {
          operation: id,
          status: response.status,
        },
      );
    if (!json) return text;
    try {
      return JSON.parse(text);
    } catch (cause) {
      throw new TesseraAdminError(AdminErrorCodes.invalidResponse, 'the answer is not valid JSON', {
        operation: id,
        status: response.status,
        cause,
      });
    }
  }
}
