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

/** One HTTP request to an SMS provider. */
export interface SmsRequest {
  url: string;
  headers: Record<string, string>;
  body: string;
}

/** What a provider's answer means: accepted, or a failure (safe to log: no code, no number). */
export type SmsVerdict =
  | { ok: true }
  | { ok: false; retry: boolean; message: string; status?: number; rejected?: boolean };

export interface SmsHttpOptions {
  /** Limit for each request, answer headers included. Default 10 000 ms. */
  timeoutMs?: number;
  /** Pause before the single retry after a 5xx or a network error. Default 250 ms. */
  retryDelayMs?: number;
}

const DEFAULT_TIMEOUT_MS = 10_000;
const DEFAULT_RETRY_DELAY_MS = 250;
/** The most of an answer body read to classify an error (providers may echo the text, so the code). */
const MAX_ANSWER_BYTES = 16 * 1024;

/**
 * The HTTP mechanics every SMS provider shares: one retry after a 5xx, a provider's own "try
 * again" answer (a rate limit) or a network error; none after another 4xx (the request itself is wrong) or a
 * timeout (the provider may have taken it, and the user is waiting). A provider supplies how to
 * build its request and, when its status code does not say it all, how to read its answer.
 */
export abstract class SmsHttpProvider implements Delivery {
  readonly #timeoutMs: number;
  readonly #retryDelayMs: number;
  readonly #logger: Logger;
  #closed = false;

  constructor(
    /** How log lines and errors name the provider ("SMS provider", "Twilio"). */
    protected readonly providerName: string,
    options: SmsHttpOptions,
    logger: Logger,
  ) {
    this.#timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.#retryDelayMs = options.retryDelayMs ?? DEFAULT_RETRY_DELAY_MS;
    this.#logger = logger;
  }

  /**
   * The request for one text to one E.164 number, as a function called once per attempt (a
   * signature may need the time of sending; an idempotency key must stay the same).
   */
  protected abstract prepare(to: string, text: string): () => SmsRequest;

  /** Reads an answer; by default only its status counts and its body is never read. */
  protected async judge(response: Response): Promise<SmsVerdict> {
    await response.body?.cancel().catch(() => undefined);
    return statusVerdict(this.providerName, response.status);
  }

  send(message: OtpMessage): Promise<void> {
    return this.#deliver(message, renderOtpSms(message), 'OTP SMS');
  }

  notify(notice: SecurityNotice): Promise<void> {
    return this.#deliver(notice, noticeText(notice).text, 'security notice SMS');
  }

  async close(): Promise<void> {
    this.#closed = true;
  }

  async #deliver(message: { to: string; channel: string }, text: string, what: string): Promise<void> {
    if (this.#closed) throw new DeliveryError('SMS delivery is closed');
    if (message.channel !== 'sms') throw new DeliveryError(`${this.providerName} delivery only sends SMS`);
    const request = this.prepare(message.to, text);
    for (let attempt = 1; ; attempt++) {
      const outcome = await this.#post(request());
      if (outcome.ok) {
        this.#logger.debug({ channel: 'sms', attempt }, `${what} accepted by ${this.providerName}`);
        return;
      }
      const fields = { channel: 'sms', attempt, status: outcome.status };
      if (!outcome.retry || attempt >= 2) {
        this.#logger.warn(fields, `${what} not sent: ${outcome.message}`);
        throw new DeliveryError(outcome.message, {
          cause: outcome.cause,
          status: outcome.status,
          rejected: outcome.rejected === true,
        });
      }
      this.#logger.warn(fields, `${outcome.message}; retrying once`);
      await sleep(this.#retryDelayMs);
    }
  }

  async #post(request: SmsRequest): Promise<SmsVerdict & { cause?: unknown }> {
    let response: Response;
    try {
      response = await fetch(request.url, {
        method: 'POST',
        headers: request.headers,
        body: request.body,
        // A redirect would carry the credentials elsewhere; treat it as an answer instead.
        redirect: 'manual',
        signal: AbortSignal.timeout(this.#timeoutMs),
      });
    } catch (err) {
      if (err instanceof Error && err.name === 'TimeoutError') {
        return { ok: false, retry: false, message: `${this.providerName} timed out`, cause: err };
      }
      return { ok: false, retry: true, message: `${this.providerName} could not be reached`, cause: err };
    }
    try {
      return await this.judge(response);
    } catch (err) {
      await response.body?.cancel().catch(() => undefined);
      return {
        ok: false,
        retry: response.status >= 500,
        message: `${this.providerName} answered ${response.status} with an unreadable body`,
        status: response.status,
        cause: err,
      };
    }
  }
}

/** Success for 2xx; a retry for 5xx (and for 429 when `retryTooMany`: the provider's rate limit). */
export function statusVerdict(
  provider: string,
  status: number,
  detail = '',
  retryTooMany = false,
): SmsVerdict {
  if (status >= 200 && status < 300) return { ok: true };
  return {
    ok: false,
    retry: status >= 500 || (retryTooMany && status === 429),
    message: `${provider} answered ${status}${detail}`,
    status,
  };
}

/** The first MAX_ANSWER_BYTES of an answer, as text (the rest is dropped). */
export async function answerText(response: Response): Promise<string> {
  if (!response.body) return '';
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  while (size < MAX_ANSWER_BYTES) {
    const { done, value } = await reader.read();
    if (done) break;
    chunks.push(value);
    size += value.byteLength;
  }
  await reader.cancel().catch(() => undefined);
  return Buffer.concat(chunks).subarray(0, MAX_ANSWER_BYTES).toString('utf8');
}

/** A provider base URL: http(s), no credentials (fetch would quote them in its errors), no trailing slash. */
export function baseUrl(url: string, what: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new TypeError(`${what} is not a valid URL`);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:')
    throw new TypeError(`${what} must start with http:// or https://`);
  if (parsed.username !== '' || parsed.password !== '')
    throw new TypeError(`${what} must not contain credentials`);
  return parsed.href.replace(/\/+$/, '');
}
