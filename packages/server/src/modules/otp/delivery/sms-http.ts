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

/**
 * What a provider's answer means: accepted, or a failure (safe to log: no code, no number).
 * `retry`: the failure is passing (a network error, a rate limit, a 5xx) and worth one more try.
 * `unknown`: the provider may have taken the message all the same (the request was written and
 * then the connection broke or timed out, or a 5xx the provider does not document as "nothing
 * done"); such a failure is retried only by a provider whose requests carry an idempotency key.
 */
export type SmsVerdict =
  | { ok: true }
  | {
      ok: false;
      retry: boolean;
      message: string;
      status?: number;
      rejected?: boolean;
      unknown?: boolean;
    };

export interface SmsHttpOptions {
  /** Limit for each request, answer headers included. Default 10 000 ms. */
  timeoutMs?: number;
  /** Pause before the single retry after a 5xx or a network error. Default 250 ms. */
  retryDelayMs?: number;
}

/** How a status verdict reads a provider's failure answers. */
export interface StatusRules {
  /** 429 is the provider's rate limit: nothing was sent, one retry. */
  retryTooMany?: boolean;
  /** 5xx statuses the provider documents as "nothing done, try again" (Twilio's 503): one retry. */
  notProcessed?: ReadonlySet<number>;
}

/**
 * Errors raised before any byte of the request was written: the name did not resolve, the
 * connection was refused or never made, the TLS handshake failed (a certificate is checked before
 * the request goes out). Anything else — a reset, "other side closed", a timeout — may have come
 * after the provider read the whole request.
 */
const BEFORE_SENDING = new Set([
  'ENOTFOUND',
  'EAI_AGAIN',
  'ECONNREFUSED',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EADDRNOTAVAIL',
  'UND_ERR_CONNECT_TIMEOUT',
  'ERR_TLS_CERT_ALTNAME_INVALID',
  'ERR_SSL_WRONG_VERSION_NUMBER',
  'CERT_HAS_EXPIRED',
  'CERT_NOT_YET_VALID',
  'CERT_REVOKED',
  'CERT_UNTRUSTED',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
]);

/** Whether a fetch error certainly happened before the request was written (see BEFORE_SENDING). */
export function failedBeforeSending(error: unknown): boolean {
  let current: unknown = error;
  for (let depth = 0; depth < 4 && typeof current === 'object' && current !== null; depth++) {
    const { code, errors } = current as { code?: unknown; errors?: unknown };
    if (typeof code === 'string' && BEFORE_SENDING.has(code)) return true;
    // Several addresses tried (happy eyeballs): each one failed before sending.
    if (Array.isArray(errors) && errors.length > 0 && errors.every((e) => failedBeforeSending(e)))
      return true;
    current = (current as { cause?: unknown }).cause;
  }
  return false;
}

const DEFAULT_TIMEOUT_MS = 10_000;
const DEFAULT_RETRY_DELAY_MS = 250;
/** The most of an answer body read to classify an error (providers may echo the text, so the code). */
const MAX_ANSWER_BYTES = 16 * 1024;

/**
 * The HTTP mechanics every SMS provider shares. One retry when nothing was sent: the provider
 * could not be reached (no byte of the request written), its rate limit, or an answer it documents
 * as "not processed". A failure after the request was written (connection reset, a 5xx that may
 * still have sent) leaves it unknown whether the text went out: retried only by a provider whose
 * requests carry an idempotency key (`idempotent`), since a second request would send — and bill —
 * a second SMS. Never a retry after another 4xx (the request itself is wrong) or a timeout (the
 * user is waiting). A provider supplies how to build its request and, when its status code does
 * not say it all, how to read its answer.
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
   * Whether the provider drops a repeated request (the same idempotency key on each attempt), so a
   * request that may have been taken can be sent again. Twilio, Vonage and SNS have no such key.
   */
  protected readonly idempotent: boolean = false;

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
      const unknown = outcome.unknown === true;
      const fields = {
        channel: 'sms',
        attempt,
        status: outcome.status,
        ...(unknown ? { sent: 'unknown' } : {}),
      };
      const retry = outcome.retry && (!unknown || this.idempotent);
      if (!retry || attempt >= 2) {
        const message = unknown ? `${outcome.message}; unknown whether sent` : outcome.message;
        this.#logger.warn(fields, unknown ? `${what}: ${message}` : `${what} not sent: ${message}`);
        throw new DeliveryError(message, {
          cause: outcome.cause,
          status: outcome.status,
          rejected: outcome.rejected === true,
          unknown,
        });
      }
      this.#logger.warn(
        fields,
        unknown
          ? `${outcome.message}; unknown whether sent, retrying once with the same idempotency key`
          : `${outcome.message}; retrying once`,
      );
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
        return {
          ok: false,
          retry: false,
          unknown: true,
          message: `${this.providerName} timed out`,
          cause: err,
        };
      }
      if (failedBeforeSending(err)) {
        return { ok: false, retry: true, message: `${this.providerName} could not be reached`, cause: err };
      }
      return {
        ok: false,
        retry: true,
        unknown: true,
        message: `${this.providerName} connection failed after the request was sent`,
        cause: err,
      };
    }
    try {
      return await this.judge(response);
    } catch (err) {
      await response.body?.cancel().catch(() => undefined);
      // A 2xx or 5xx whose body broke off: the provider may have taken the message.
      const unknown = response.status < 300 || response.status >= 500;
      return {
        ok: false,
        retry: response.status >= 500,
        unknown,
        message: `${this.providerName} answered ${response.status} with an unreadable body`,
        status: response.status,
        cause: err,
      };
    }
  }
}

/**
 * Success for 2xx. A 5xx is retried but leaves it unknown whether the message went out, unless
 * the provider documents that status as "not processed" (`notProcessed`); 429 with `retryTooMany`
 * is the provider's rate limit (nothing sent, one retry); any other status is a plain refusal.
 */
export function statusVerdict(
  provider: string,
  status: number,
  detail = '',
  rules: StatusRules = {},
): SmsVerdict {
  if (status >= 200 && status < 300) return { ok: true };
  const serverError = status >= 500;
  const unknown = serverError && !(rules.notProcessed?.has(status) ?? false);
  return {
    ok: false,
    retry: serverError || (rules.retryTooMany === true && status === 429),
    message: `${provider} answered ${status}${detail}`,
    status,
    ...(unknown ? { unknown } : {}),
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
