import http from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';
import { isInternalHost, publicOnlyLookup } from '../../net/address-policy.js';

/** What one HTTP attempt got: the status code if any, and an error text unless it was a 2xx. */
export interface Attempt {
  status: number | null;
  error: string | null;
}

export interface PostOptions {
  headers: Record<string, string>;
  body: string;
  timeoutMs: number;
  /** Loopback, private and link-local targets may be reached (development and tests). */
  allowPrivate: boolean;
  /** How host names are resolved when private targets are refused (the system resolver by default). */
  lookup?: LookupFunction;
}

/**
 * The texts a delivery's `last_error` may hold. The integrator reads them through the API, so they
 * name no address, port or system error: a refused connection and a reset one read the same.
 */
export const AttemptErrors = {
  notAllowed: 'address not allowed',
  notFound: 'host not found',
  timedOut: 'timed out',
  tls: 'TLS handshake failed',
  failed: 'connection failed',
} as const;

const DNS_FAILURES = new Set(['ENOTFOUND', 'EAI_AGAIN', 'EAI_FAIL', 'EAI_NODATA', 'EAI_NONAME']);

function describe(error: unknown): string {
  const { code, name } = (error ?? {}) as { code?: unknown; name?: unknown };
  if (code === 'ERR_ADDRESS_NOT_ALLOWED') return AttemptErrors.notAllowed;
  if (name === 'AbortError' || name === 'TimeoutError') return AttemptErrors.timedOut;
  if (typeof code === 'string') {
    if (DNS_FAILURES.has(code)) return AttemptErrors.notFound;
    if (code.startsWith('ERR_TLS_') || code.startsWith('ERR_SSL_') || /CERT|SELF_SIGNED|UNABLE_TO/.test(code))
      return AttemptErrors.tls;
  }
  return AttemptErrors.failed;
}

/**
 * One webhook POST. Without `allowPrivate` the target must be public: an address literal is
 * checked here, a host name by the socket's lookup when it connects (see `publicOnlyLookup`).
 * Redirects are never followed: a 3xx is a failed attempt like any other non-2xx, so a public
 * URL cannot bounce the request to an internal one. The response body is not read.
 */
export function postWebhook(target: string, options: PostOptions): Promise<Attempt> {
  const url = new URL(target);
  if (!options.allowPrivate && isInternalHost(url.hostname)) {
    return Promise.resolve({ status: null, error: AttemptErrors.notAllowed });
  }
  const client = url.protocol === 'https:' ? https : http;
  return new Promise((resolve) => {
    const request = client.request(
      url,
      {
        method: 'POST',
        agent: false,
        signal: AbortSignal.timeout(options.timeoutMs),
        headers: { ...options.headers, 'content-length': String(Buffer.byteLength(options.body)) },
        ...(options.allowPrivate ? {} : { lookup: options.lookup ?? publicOnlyLookup() }),
      },
      (response) => {
        const status = response.statusCode ?? 0;
        response.destroy();
        const ok = status >= 200 && status < 300;
        const redirect = status >= 300 && status < 400 ? ' (redirects are not followed)' : '';
        resolve({ status, error: ok ? null : `endpoint answered ${status}${redirect}` });
      },
    );
    request.on('error', (error) => resolve({ status: null, error: describe(error) }));
    request.end(options.body);
  });
}
