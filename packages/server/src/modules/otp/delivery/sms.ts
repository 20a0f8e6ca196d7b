import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { type SmsHttpOptions, SmsHttpProvider, type SmsRequest } from './sms-http.js';

export interface HttpSmsDeliveryOptions extends SmsHttpOptions {
  /** The provider's endpoint; receives `POST` with JSON `{ to, from, body }`. */
  url: string;
  /** Sent as `Authorization: Bearer <token>` when given. */
  token?: string;
  /** Sender id or number passed to the provider; left out of the request when not set. */
  from?: string;
}

/**
 * Sends OTP text messages through a generic HTTP SMS gateway: `POST <url>` with JSON
 * `{ to, from, body }`. The single retry (see SmsHttpProvider) carries the same `Idempotency-Key`,
 * so it also follows a failure that may have sent the message (a reset after the request, a 5xx).
 * The answer body is never read: providers may echo the message text, and so the code.
 */
export class HttpSmsDelivery extends SmsHttpProvider {
  /** The gateway drops a repeated `Idempotency-Key`: a request that may have been taken is sent again. */
  protected override readonly idempotent = true;
  readonly #url: string;
  readonly #token: string | undefined;
  readonly #from: string | undefined;

  constructor(options: HttpSmsDeliveryOptions, logger: Logger) {
    super('SMS provider', options, logger);
    this.#url = providerUrl(options.url);
    this.#token = options.token;
    this.#from = options.from;
  }

  protected prepare(to: string, text: string): () => SmsRequest {
    const headers: Record<string, string> = {
      'Content-Type': 'application/json',
      'Idempotency-Key': randomUUID(),
    };
    if (this.#token !== undefined) headers['Authorization'] = `Bearer ${this.#token}`;
    const request = { url: this.#url, headers, body: JSON.stringify({ to, from: this.#from, body: text }) };
    return () => request;
  }
}

function providerUrl(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new TypeError('SMS provider url is not a valid URL');
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    throw new TypeError('SMS provider url must start with http:// or https://');
  }
  // fetch would refuse it with an error that quotes the whole URL, credentials included.
  if (parsed.username !== '' || parsed.password !== '') {
    throw new TypeError('SMS provider url must not contain credentials; pass them as the token');
  }
  return parsed.href;
}
