import { getSystemErrorName } from 'node:util';
import type { Logger } from 'pino';
import type { Channel, Delivery, OtpMessage, SecurityNotice } from './delivery.js';

/** One hand-over to a provider, as metrics and readiness see it: no recipient, no text, no code. */
export interface DeliveryAttempt {
  channel: Channel;
  /** The provider's name (`smtp`, `http_sms`, `dev_outbox`, …): a bounded set, fit for a label. */
  provider: string;
  kind: 'otp' | 'notice';
  outcome: 'success' | 'failure';
  seconds: number;
  /** Failures only: what went wrong, without anything the provider said. */
  failure?: DeliveryFailure;
}

/**
 * What is safe to log of a provider's error: nodemailer's `code` (`EAUTH`, `ESOCKET`, …), the
 * system error underneath (`ECONNREFUSED`, `ENOTFOUND`), the SMTP reply code or the HTTP status.
 * Never the message, which may quote a server reply, a recipient or a credential.
 */
export interface DeliveryFailure {
  errorCode?: string;
  systemError?: string;
  responseCode?: number;
  status?: number;
  /** The provider refused this one message (a recipient, a sender, a message), not the service. */
  rejected: boolean;
  /** It is unknown whether the provider took the message (see DeliveryError.unknown). */
  unknown?: true;
}

/** A delivery that can name the provider each channel goes to (the channel router does). */
export interface ProviderNames {
  providerFor(channel: Channel): string;
}

/**
 * `SmtpDelivery` → `smtp`, `HttpSmsDelivery` → `http_sms`, `TwilioSmsDelivery` → `twilio_sms`:
 * the provider's class name as a label value, so a new adapter is named without registering it.
 * A delivery may say its own name with a `provider` property.
 */
export function providerName(delivery: object | undefined): string {
  if (!delivery) return 'none';
  const own = (delivery as { provider?: unknown }).provider;
  if (typeof own === 'string' && /^[a-z][a-z0-9_]{0,31}$/.test(own)) return own;
  const name = delivery.constructor?.name ?? '';
  const snake = name
    .replace(/Delivery$/, '')
    .replace(/([a-z0-9])([A-Z])/g, '$1_$2')
    .toLowerCase();
  return /^[a-z][a-z0-9_]{0,31}$/.test(snake) ? snake : 'other';
}

const CODE = /^[A-Z][A-Z0-9_]{1,31}$/;

/** Collects the safe fields of a provider error, following `cause` a few steps down. */
export function describeFailure(error: unknown): DeliveryFailure {
  const failure: DeliveryFailure = { rejected: false };
  let current: unknown = error;
  for (let depth = 0; depth < 4 && typeof current === 'object' && current !== null; depth++) {
    const { code, errno, responseCode, status } = current as Record<string, unknown>;
    if (failure.errorCode === undefined && typeof code === 'string' && CODE.test(code)) {
      // fetch's "fetch failed" wraps the socket error, whose code is the system error itself.
      if (/^E[A-Z]+$/.test(code) && isSystemError(code)) failure.systemError ??= code;
      else failure.errorCode = code;
    }
    if (failure.systemError === undefined && typeof errno === 'number' && errno < 0) {
      try {
        failure.systemError = getSystemErrorName(errno);
      } catch {
        // Not a system error number.
      }
    }
    if (failure.responseCode === undefined && typeof responseCode === 'number')
      failure.responseCode = responseCode;
    if (failure.status === undefined && typeof status === 'number') failure.status = status;
    current = (current as { cause?: unknown }).cause;
  }
  failure.rejected =
    (error as { rejected?: unknown } | null)?.rejected === true ||
    failure.errorCode === 'EENVELOPE' ||
    failure.errorCode === 'EMESSAGE' ||
    (failure.status !== undefined &&
      failure.status >= 400 &&
      failure.status < 500 &&
      ![401, 403, 429].includes(failure.status));
  if ((error as { unknown?: unknown } | null)?.unknown === true) failure.unknown = true;
  return failure;
}

const SYSTEM_ERRORS = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EPIPE',
  'ECONNABORTED',
]);

function isSystemError(code: string): boolean {
  return SYSTEM_ERRORS.has(code);
}

/**
 * Wraps the delivery every message goes through (whatever the provider) to time each hand-over,
 * tell listeners (metrics, readiness) how it went, and log a failure with its error codes —
 * once, here, rather than in each adapter.
 */
export class ObservedDelivery implements Delivery {
  readonly #inner: Delivery;
  readonly #logger: Logger;
  readonly #listeners: Array<(attempt: DeliveryAttempt) => void> = [];

  constructor(inner: Delivery, logger: Logger) {
    this.#inner = inner;
    this.#logger = logger;
  }

  /** Called after every hand-over, successful or not. */
  onAttempt(listener: (attempt: DeliveryAttempt) => void): void {
    this.#listeners.push(listener);
  }

  send(message: OtpMessage): Promise<void> {
    return this.#observe('otp', message.channel, () => this.#inner.send(message));
  }

  notify(notice: SecurityNotice): Promise<void> {
    return this.#observe('notice', notice.channel, () => this.#inner.notify(notice));
  }

  close(): Promise<void> {
    return this.#inner.close();
  }

  #provider(channel: Channel): string {
    const names = this.#inner as Partial<ProviderNames>;
    return typeof names.providerFor === 'function' ? names.providerFor(channel) : providerName(this.#inner);
  }

  async #observe(kind: DeliveryAttempt['kind'], channel: Channel, work: () => Promise<void>): Promise<void> {
    const started = performance.now();
    const provider = this.#provider(channel);
    try {
      await work();
    } catch (error) {
      const failure = describeFailure(error);
      const { unknown, ...fields } = withoutRejected(failure);
      this.#logger.warn(
        { channel, provider, kind, ...fields, ...(unknown ? { sent: 'unknown' } : {}) },
        `delivery failed: ${error instanceof Error && error.name === 'DeliveryError' ? error.message : 'provider error'}`,
      );
      this.#report({ channel, provider, kind, outcome: 'failure', seconds: elapsed(started), failure });
      throw error;
    }
    this.#report({ channel, provider, kind, outcome: 'success', seconds: elapsed(started) });
  }

  #report(attempt: DeliveryAttempt): void {
    for (const listener of this.#listeners) {
      try {
        listener(attempt);
      } catch (error) {
        this.#logger.warn({ err: error }, 'delivery listener failed');
      }
    }
  }
}

function withoutRejected({ rejected: _, ...fields }: DeliveryFailure): Omit<DeliveryFailure, 'rejected'> {
  return fields;
}

function elapsed(started: number): number {
  return (performance.now() - started) / 1000;
}
