import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import {
  type Delivery,
  DeliveryError,
  noticeText,
  type OtpMessage,
  type SecurityNotice,
} from './delivery.js';
import { renderOtpSms } from './templates/render.js';

export interface HttpSmsDeliveryOptions {
  /** The provider's endpoint; receives `POST` with JSON `{ to, from, body }`. */
  url: string;
  /** Sent as `Authorization: Bearer <token>` when given. */
  token?: string;
  /** Sender id or number passed to the provider; left out of the request when not set. */
  from?: string;
  /** Limit for each request, answer headers included. Default 10 000 ms. */
  timeoutMs?: number;
  /** Pause before the single retry after a 5xx or a network error. Default 250 ms. */
  retryDelayMs?: number;
}

const DEFAULT_TIMEOUT_MS = 10_000;
const DEFAULT_RETRY_DELAY_MS = 250;

type Attempt =
  | { ok: true }
  | { ok: false; retry: boolean; message: string; status?: number; cause?: unknown };

/**
 * Sends OTP text messages through an HTTP SMS gateway. One retry, with the same
 * `Idempotency-Key`, after a 5xx answer or a network error; none after a 4xx (the request
 * itself is wrong) or a timeout (the provider may have taken it, and the user is waiting).
 */
export class HttpSmsDelivery implements Delivery {
  readonly #url: string;
  readonly #token: string | undefined;
  readonly #from: string | undefined;
  readonly #timeoutMs: number;
  readonly #retryDelayMs: number;
  readonly #logger: Logger;
  #closed = false;

  constructor(options: HttpSmsDeliveryOptions, logger: Logger) {
    this.#url = providerUrl(options.url);
    this.#token = options.token;
    this.#from = options.from;
    this.#timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.#retryDelayMs = options.retryDelayMs ?? DEFAULT_RETRY_DELAY_MS;
    this.#logger = logger;
  }

  send(message: OtpMessage): Promise<void> {
    return this.#deliver(message, renderOtpSms(message), 'OTP SMS');
  }

  notify(notice: SecurityNotice): Promise<void> {
    return this.#deliver(notice, noticeText(notice).text, 'security notice SMS');
  }

  async #deliver(message: { to: string; channel: string }, text: string, what: string): Promise<void> {
    if (this.#closed) throw new DeliveryError('SMS delivery is closed');
    if (message.channel !== 'sms') throw new DeliveryError('HTTP SMS delivery only sends SMS');
    const body = JSON.stringify({ to: message.to, from: this.#from, body: text });
    const headers: Record<string, string> = {
      'Content-Type': 'application/json',
      'Idempotency-Key': randomUUID(),
    };
    if (this.#token !== undefined) headers['Authorization'] = `Bearer ${this.#token}`;

    for (let attempt = 1; ; attempt++) {
      const outcome = await this.#post(body, headers);
      if (outcome.ok) {
        this.#logger.debug({ channel: 'sms', attempt }, `${what} accepted by the provider`);
        return;
      }
      const fields = { channel: 'sms', attempt, status: outcome.status };
      if (!outcome.retry || attempt >= 2) {
        this.#logger.warn(fields, `${what} not sent: ${outcome.message}`);
        throw new DeliveryError(outcome.message, { cause: outcome.cause });
      }
      this.#logger.warn(fields, `${outcome.message}; retrying once`);
      await sleep(this.#retryDelayMs);
    }
  }

  async close(): Promise<void> {
    this.#closed = true;
  }

  async #post(body: string, headers: Record<string, string>): Promise<Attempt> {
    let response: Response;
    try {
      response = await fetch(this.#url, {
        method: 'POST',
        headers,
        body,
        // A redirect would carry the token elsewhere; treat it as an answer instead.
        redirect: 'manual',
        signal: AbortSignal.timeout(this.#timeoutMs),
      });
    } catch (err) {
      if (err instanceof Error && err.name === 'TimeoutError') {
        return { ok: false, retry: false, message: 'SMS provider timed out', cause: err };
      }
      return { ok: false, retry: true, message: 'SMS provider could not be reached', cause: err };
    }
    // The answer body is never read: providers may echo the message text, and so the code.
    await response.body?.cancel().catch(() => undefined);
    if (response.ok) return { ok: true };
    return {
      ok: false,
      retry: response.status >= 500,
      message: `SMS provider answered ${response.status}`,
      status: response.status,
    };
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
