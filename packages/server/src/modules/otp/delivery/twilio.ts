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

export interface TwilioSmsOptions extends SmsHttpOptions {
  accountSid: string;
  authToken: string;
  /** A Twilio number (E.164) or a Messaging Service SID (`MG…`, sent as `MessagingServiceSid`). */
  from: string;
  /** Default `https://api.twilio.com`; tests point it at a local fake. */
  baseUrl?: string;
}

/**
 * 429 is Twilio's rate limit; 503 (error 20503, "service temporarily unavailable") is documented as
 * "try again". Any other 5xx may still have sent the SMS (Twilio's error 20500 says a retried
 * message POST can reach the user twice), and a Messages POST has no idempotency key.
 */
const TWILIO_RULES = { retryTooMany: true, notProcessed: new Set([503]) };

/**
 * Twilio Programmable Messaging: `POST /2010-04-01/Accounts/{AccountSid}/Messages.json`, a form
 * body (`To`, `From` or `MessagingServiceSid`, `Body`), HTTP Basic auth with the account SID and
 * auth token. `201 Created` is success; an error answer's numeric `code` is logged, never its
 * `message` (it may quote the number). 429 (Twilio's rate limit) and 503 are retried once; a
 * broken connection after the request was written, or another 5xx, is not (unknown whether sent).
 */
export class TwilioSmsDelivery extends SmsHttpProvider {
  readonly #url: string;
  readonly #authorization: string;
  readonly #from: string;

  constructor(options: TwilioSmsOptions, logger: Logger) {
    super('Twilio', options, logger);
    if (!/^AC[0-9a-fA-F]{32}$/.test(options.accountSid))
      throw new TypeError('Twilio account SID must be AC followed by 32 hexadecimal digits');
    const base = baseUrl(options.baseUrl ?? 'https://api.twilio.com', 'Twilio base URL');
    this.#url = `${base}/2010-04-01/Accounts/${options.accountSid}/Messages.json`;
    this.#authorization = `Basic ${Buffer.from(`${options.accountSid}:${options.authToken}`).toString('base64')}`;
    this.#from = options.from;
  }

  protected prepare(to: string, text: string): () => SmsRequest {
    const form = new URLSearchParams({ To: to });
    form.set(/^MG[0-9a-fA-F]{32}$/.test(this.#from) ? 'MessagingServiceSid' : 'From', this.#from);
    form.set('Body', text);
    const request = {
      url: this.#url,
      headers: {
        Authorization: this.#authorization,
        'Content-Type': 'application/x-www-form-urlencoded',
        Accept: 'application/json',
      },
      body: form.toString(),
    };
    return () => request;
  }

  protected override async judge(response: Response): Promise<SmsVerdict> {
    if (response.ok) {
      await response.body?.cancel().catch(() => undefined);
      return { ok: true };
    }
    const code = twilioErrorCode(await answerText(response));
    return statusVerdict(
      'Twilio',
      response.status,
      code === undefined ? '' : ` (error ${code})`,
      TWILIO_RULES,
    );
  }
}

/** The numeric `code` of a Twilio error answer (https://www.twilio.com/docs/api/errors), if any. */
function twilioErrorCode(body: string): number | undefined {
  try {
    const code = (JSON.parse(body) as { code?: unknown }).code;
    return typeof code === 'number' && Number.isInteger(code) ? code : undefined;
  } catch {
    return undefined;
  }
}
