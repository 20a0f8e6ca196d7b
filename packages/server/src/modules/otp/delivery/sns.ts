import aws4 from 'aws4';
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

export interface SnsSmsOptions extends SmsHttpOptions {
  region: string;
  accessKeyId: string;
  secretAccessKey: string;
  /** For temporary credentials (STS). */
  sessionToken?: string;
  /** Sent as the `AWS.SNS.SMS.SenderID` attribute where the destination country supports it. */
  senderId?: string;
  /** Default `https://sns.<region>.amazonaws.com`; tests point it at a local fake. */
  endpoint?: string;
}

/** AWS error codes that mean "slow down": the message may be sent again. */
const THROTTLED = new Set(['Throttling', 'ThrottlingException', 'ThrottledException']);

/**
 * Amazon SNS `Publish` to a phone number through the query API: `POST /` with a form body
 * (`Action=Publish`, `Version=2010-03-31`, `PhoneNumber`, `Message`, the SMS type `Transactional`
 * and the optional sender id as message attributes), signed with AWS Signature Version 4 by `aws4`
 * afresh for each attempt. An error answer's `<Code>` is logged, never its `<Message>`. Throttling
 * is retried once; a broken connection after the request was written, or a 5xx (`InternalError`),
 * is not: `Publish` has no idempotency key for SMS, so a second request would send a second text.
 */
export class SnsSmsDelivery extends SmsHttpProvider {
  readonly #endpoint: URL;
  readonly #options: SnsSmsOptions;

  constructor(options: SnsSmsOptions, logger: Logger) {
    super('Amazon SNS', options, logger);
    if (!/^[a-z]{2}(-[a-z]+)+-\d$/.test(options.region))
      throw new TypeError('SNS region must be an AWS region name such as us-east-1');
    this.#endpoint = new URL(
      `${baseUrl(options.endpoint ?? `https://sns.${options.region}.amazonaws.com`, 'SNS endpoint')}/`,
    );
    this.#options = options;
  }

  protected prepare(to: string, text: string): () => SmsRequest {
    const form = new URLSearchParams({
      Action: 'Publish',
      Version: '2010-03-31',
      PhoneNumber: to,
      Message: text,
      'MessageAttributes.entry.1.Name': 'AWS.SNS.SMS.SMSType',
      'MessageAttributes.entry.1.Value.DataType': 'String',
      'MessageAttributes.entry.1.Value.StringValue': 'Transactional',
    });
    if (this.#options.senderId) {
      form.set('MessageAttributes.entry.2.Name', 'AWS.SNS.SMS.SenderID');
      form.set('MessageAttributes.entry.2.Value.DataType', 'String');
      form.set('MessageAttributes.entry.2.Value.StringValue', this.#options.senderId);
    }
    const body = form.toString();
    return () => this.#signed(body);
  }

  #signed(body: string): SmsRequest {
    const { accessKeyId, secretAccessKey, sessionToken, region } = this.#options;
    const signed = aws4.sign(
      {
        host: this.#endpoint.host,
        path: this.#endpoint.pathname,
        method: 'POST',
        service: 'sns',
        region,
        headers: { 'Content-Type': 'application/x-www-form-urlencoded; charset=utf-8' },
        body,
      },
      { accessKeyId, secretAccessKey, ...(sessionToken ? { sessionToken } : {}) },
    );
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(signed.headers ?? {})) {
      // fetch sends Host (and Content-Length) from the URL and body itself, the same as signed.
      if (/^(host|content-length)$/i.test(name)) continue;
      headers[name] = String(value);
    }
    return { url: this.#endpoint.href, headers, body };
  }

  protected override async judge(response: Response): Promise<SmsVerdict> {
    if (response.ok) {
      await response.body?.cancel().catch(() => undefined);
      return { ok: true };
    }
    const code = /<Code>([A-Za-z0-9.]{1,100})<\/Code>/.exec(await answerText(response))?.[1];
    const verdict = statusVerdict('Amazon SNS', response.status, code ? ` (${code})` : '', {
      retryTooMany: true,
    });
    if (verdict.ok || !code || !THROTTLED.has(code)) return verdict;
    // Throttled: refused before anything was done, whatever the status.
    const { unknown: _, ...refused } = verdict;
    return { ...refused, retry: true };
  }
}
