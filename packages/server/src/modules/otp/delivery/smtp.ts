import type nodemailer from 'nodemailer';
import type SMTPPool from 'nodemailer/lib/smtp-pool/index.js';
import type { Logger } from 'pino';
import { lazyImport } from '../../../lazy.js';
import {
  type Delivery,
  DeliveryError,
  noticeText,
  type OtpMessage,
  type SecurityNotice,
} from './delivery.js';
import { escapeHtml, renderOtpEmail } from './templates/render.js';

export interface SmtpDeliveryOptions {
  /**
   * `smtp://user:pass@host:port` (upgrades with STARTTLS when the server offers it) or
   * `smtps://user:pass@host:port` (TLS from the first byte). User and password are percent-decoded.
   */
  url: string;
  /** Sender address, e.g. `Acme <no-reply@acme.example>`. */
  from: string;
  /** Limit for connecting, for the greeting and for each SMTP step. Default 10 000 ms. */
  timeoutMs?: number;
}

const DEFAULT_TIMEOUT_MS = 10_000;

/** nodemailer (about 450 KB of source) is loaded for the first message, and only with SMTP. */
const loadNodemailer = lazyImport(async () => (await import('nodemailer')).default);

/** Sends OTP e-mails through one SMTP server over a small pool of kept-open connections. */
export class SmtpDelivery implements Delivery {
  /** Created with the first message (nodemailer is loaded then). */
  #transport: nodemailer.Transporter<SMTPPool.SentMessageInfo> | undefined;
  readonly #pool: SMTPPool.Options;
  readonly #from: string;
  readonly #logger: Logger;
  #closed = false;

  constructor(options: SmtpDeliveryOptions, logger: Logger) {
    // The URL is checked here, at start-up, even though the transport waits for the first message.
    this.#pool = poolOptions(options.url, options.timeoutMs ?? DEFAULT_TIMEOUT_MS);
    this.#from = options.from;
    this.#logger = logger;
  }

  send(message: OtpMessage): Promise<void> {
    return this.#deliver(message, renderOtpEmail(message), 'OTP e-mail');
  }

  notify(notice: SecurityNotice): Promise<void> {
    const { subject, text } = noticeText(notice);
    return this.#deliver(notice, { subject, text, html: `<p>${escapeHtml(text)}</p>` }, 'security notice');
  }

  async #deliver(
    message: { to: string; channel: string },
    content: { subject: string; text: string; html: string },
    what: string,
  ): Promise<void> {
    if (this.#closed) throw new DeliveryError('SMTP delivery is closed');
    if (message.channel !== 'email') throw new DeliveryError('SMTP delivery only sends e-mail');
    // A comma or angle bracket would let one "address" become several envelope recipients.
    if (!/^[^\s,;<>"]+@[^\s,;<>"]+$/.test(message.to)) {
      throw new DeliveryError('recipient is not a single e-mail address');
    }
    const transport = await this.#transporter();
    try {
      await transport.sendMail({ from: this.#from, to: message.to, ...content });
    } catch (err) {
      const failure = smtpFailure(err);
      // Only the classified fields: nodemailer's messages may quote server replies and recipients.
      this.#logger.warn({ channel: 'email', smtp: failure.details }, `${what} not sent: ${failure.message}`);
      throw new DeliveryError(failure.message, { cause: err });
    }
    this.#logger.debug({ channel: 'email' }, `${what} accepted by the SMTP server`);
  }

  async #transporter(): Promise<nodemailer.Transporter<SMTPPool.SentMessageInfo>> {
    if (this.#transport) return this.#transport;
    const nodemailer = await loadNodemailer();
    if (this.#closed) throw new DeliveryError('SMTP delivery is closed');
    this.#transport ??= nodemailer.createTransport(this.#pool);
    return this.#transport;
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#transport?.close();
  }
}

function poolOptions(url: string, timeoutMs: number): SMTPPool.Options {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    // No cause: the TypeError carries the whole URL, password included.
    throw new TypeError('SMTP url is not a valid URL; expected smtp://user:pass@host:port or smtps://…');
  }
  if (parsed.protocol !== 'smtp:' && parsed.protocol !== 'smtps:') {
    throw new TypeError('SMTP url must start with smtp:// or smtps://');
  }
  if (parsed.hostname === '') throw new TypeError('SMTP url has no host');
  const user = decodeUrlPart(parsed.username);
  return {
    pool: true,
    host: parsed.hostname.replace(/^\[(.*)\]$/, '$1'),
    port: parsed.port === '' ? undefined : Number(parsed.port),
    secure: parsed.protocol === 'smtps:',
    auth: user === '' ? undefined : { user, pass: decodeUrlPart(parsed.password) },
    connectionTimeout: timeoutMs,
    greetingTimeout: timeoutMs,
    socketTimeout: timeoutMs,
    dnsTimeout: timeoutMs,
    // nodemailer's own logger would print message bodies, and so the code.
    logger: false,
    debug: false,
    disableFileAccess: true,
    disableUrlAccess: true,
  };
}

function decodeUrlPart(part: string): string {
  try {
    return decodeURIComponent(part);
  } catch {
    throw new TypeError('SMTP url has a malformed %-escape in its user or password');
  }
}

interface SmtpFailure {
  message: string;
  details: { code?: string; command?: string; responseCode?: number };
}

/** Names the kind of failure from nodemailer's error code; its message is never passed through. */
function smtpFailure(err: unknown): SmtpFailure {
  const { code, command, responseCode } = (typeof err === 'object' && err !== null ? err : {}) as {
    code?: unknown;
    command?: unknown;
    responseCode?: unknown;
  };
  const details: SmtpFailure['details'] = {};
  if (typeof code === 'string') details.code = code;
  if (typeof command === 'string') details.command = command;
  if (typeof responseCode === 'number') details.responseCode = responseCode;
  const reply = details.responseCode === undefined ? '' : ` (${details.responseCode})`;
  return { message: `${failureKind(details.code, details.command)}${reply}`, details };
}

function failureKind(code: string | undefined, command: string | undefined): string {
  switch (code) {
    case 'EAUTH':
      return 'SMTP authentication failed';
    case 'ETIMEDOUT':
      return 'SMTP server timed out';
    case 'EDNS':
      return 'SMTP server name could not be resolved';
    case 'ECONNECTION':
    case 'ESOCKET':
      return 'SMTP connection failed';
    case 'ETLS':
    case 'EREQUIRETLS':
      return 'SMTP TLS negotiation failed';
    case 'EENVELOPE':
      if (command === 'RCPT TO') return 'SMTP server rejected the recipient';
      if (command === 'MAIL FROM') return 'SMTP server rejected the sender';
      return 'SMTP server rejected the envelope';
    case 'EMESSAGE':
      return 'SMTP server rejected the message';
    case 'EPROTOCOL':
    case 'EHLO':
      return 'SMTP protocol error';
    default:
      return 'SMTP delivery failed';
  }
}
