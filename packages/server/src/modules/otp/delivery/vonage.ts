import type { Logger } from 'pino';
import {
  answerText,
  baseUrl,
  type SmsHttpOptions,
  SmsHttpProvider,
  type SmsRequest,
  type SmsVerdict,
  statusVerdict,
} from './sms-http.js';

export interface VonageSmsOptions extends SmsHttpOptions {
  apiKey: string;
  apiSecret: string;
  /** Sender: a Vonage number or an alphanumeric sender id. */
  from: string;
  /** Default `https://rest.nexmo.com`; tests point it at a local fake. */
  baseUrl?: string;
}

/** Characters of the GSM 03.38 default alphabet (and its extension), sent as `type=text`. */
const GSM = /^[@£$¥èéùìòÇ\nØø\rÅåΔ_ΦΓΛΩΠΨΣΘΞ^{}\\[~\]|€ÆæßÉ !"#¤%&'()*+,\-./0-9:;<=>?¡A-ZÄÖÑÜ§¿a-zäöñüà]*$/;

/**
 * Vonage statuses about this one message, not the account or the service (answered with HTTP 200,
 * so readiness must be told): invalid parameters (e.g. the number), invalid message, number barred,
 * invalid network code, non-whitelisted destination, number de-activated. A stranger can cause
 * these at will; they must not count as the provider being down.
 */
const REFUSED_MESSAGE = new Set(['3', '6', '7', '22', '29', '33']);

/** Vonage's "Throttled" status: the message may be sent again. */
const THROTTLED = '1';

/**
 * Vonage (Nexmo) SMS API: `POST /sms/json` with a form body `api_key`, `api_secret`, `from`, `to`
 * (E.164 without the `+`), `text`, and `type=unicode` when the text leaves the GSM alphabet.
 * The answer is `200` even when a message was refused: every part's `status` must be `"0"`.
 * Only the status number is logged (`error-text` may quote the number); "1" (throttled) and
 * HTTP 429 are retried once; a broken connection after the request was written, or a 5xx, is not
 * (unknown whether sent: Vonage has no idempotency key).
 */
export class VonageSmsDelivery extends SmsHttpProvider {
  readonly #url: string;
  readonly #apiKey: string;
  readonly #apiSecret: string;
  readonly #from: string;

  constructor(options: VonageSmsOptions, logger: Logger) {
    super('Vonage', options, logger);
    this.#url = `${baseUrl(options.baseUrl ?? 'https://rest.nexmo.com', 'Vonage base URL')}/sms/json`;
    this.#apiKey = options.apiKey;
    this.#apiSecret = options.apiSecret;
    this.#from = options.from;
  }

  protected prepare(to: string, text: string): () => SmsRequest {
    const form = new URLSearchParams({
      api_key: this.#apiKey,
      api_secret: this.#apiSecret,
      from: this.#from,
      to: to.replace(/^\+/, ''),
      text,
    });
    if (!GSM.test(text)) form.set('type', 'unicode');
    const request = {
      url: this.#url,
      headers: { 'Content-Type': 'application/x-www-form-urlencoded', Accept: 'application/json' },
      body: form.toString(),
    };
    return () => request;
  }

  protected override async judge(response: Response): Promise<SmsVerdict> {
    if (!response.ok) {
      await response.body?.cancel().catch(() => undefined);
      // No idempotency key: a 5xx may still have sent the message (statusVerdict: unknown, no retry).
      return statusVerdict('Vonage', response.status, '', { retryTooMany: true });
    }
    const statuses = messageStatuses(await answerText(response));
    if (statuses === undefined || statuses.length === 0)
      return {
        ok: false,
        retry: false,
        unknown: true,
        message: 'Vonage answered without message statuses',
        status: 200,
      };
    const refused = statuses.find((s) => s !== '0');
    if (refused === undefined) return { ok: true };
    // A long text goes in parts, each with its own status: when some went out and others were
    // refused, the user has part of the message and we pay for it. Sending it again would send
    // (and bill) those parts twice: not retried, and reported as unknown, not as refused.
    if (statuses.some((s) => s === '0'))
      return {
        ok: false,
        retry: false,
        unknown: true,
        message: `Vonage sent part of the message and refused the rest (status ${refused})`,
        status: 200,
      };
    return {
      ok: false,
      retry: refused === THROTTLED,
      message: `Vonage refused the message (status ${refused})`,
      status: 200,
      rejected: REFUSED_MESSAGE.has(refused),
    };
  }
}

/** The `status` of each part in a Vonage answer; undefined when it is not one. */
function messageStatuses(body: string): string[] | undefined {
  try {
    const messages = (JSON.parse(body) as { messages?: unknown }).messages;
    if (!Array.isArray(messages)) return undefined;
    return messages.map((m) => {
      const status = (m as { status?: unknown } | null)?.status;
      return typeof status === 'string' && /^\d{1,4}$/.test(status) ? status : 'unknown';
    });
  } catch {
    return undefined;
  }
}
