import type { MessageTemplates } from './templates/types.js';

export type Channel = 'email' | 'sms';

/** One one-time sign-in code on its way to a user. */
export interface OtpMessage {
  /** Normalised e-mail address or E.164 phone number. */
  to: string;
  channel: Channel;
  /** The 6-digit code: never log it, never put it in an error. */
  code: string;
  /** Shown to the user ("Your Acme sign-in code"). */
  projectName: string;
  expiresInSeconds: number;
  /** Language the message is written in (a BCP 47 tag, lower case); `en` when absent. */
  locale?: string;
  /** The project's own texts and brand, overriding the built-in ones (templates/). */
  templates?: MessageTemplates | null;
  /** SMS: the domain of the WebOTP line `@<domain> #<code>` that ends the text, when set. */
  webOtpDomain?: string;
}

/** What a security notice tells the user happened to their account. */
export type NoticeEvent =
  | 'device.added'
  | 'passkey.added'
  | 'pin.set'
  | 'pin.changed'
  | 'signed_out_everywhere';

/** A message telling a user that something changed on their account (no code, no link). */
export interface SecurityNotice {
  to: string;
  channel: Channel;
  projectName: string;
  event: NoticeEvent;
  /** When it happened. */
  at: Date;
}

/** Hands OTP messages and security notices to a provider (SMTP server, SMS gateway, development outbox). */
export interface Delivery {
  /** Resolves once the provider has accepted the message; rejects with a {@link DeliveryError}. */
  send(message: OtpMessage): Promise<void>;
  /** Sends a security notice; same contract as `send`. */
  notify(notice: SecurityNotice): Promise<void>;
  /** Releases connections; `send` must not be called afterwards. */
  close(): Promise<void>;
}

/**
 * Thrown when a provider cannot take the message. `message` is safe to log: no code, no
 * credentials, no recipient. The provider's own error stays in `cause` for diagnosis.
 */
export class DeliveryError extends Error {
  override name = 'DeliveryError';
  /** An HTTP provider's answer status, when it answered (logged and used by readiness). */
  readonly status: number | undefined;
  /**
   * The provider refused this one message (its recipient, sender or content), not the service:
   * set by providers whose refusals are not HTTP 4xx answers (readiness does not count them).
   */
  readonly rejected: boolean;
  /**
   * It is unknown whether the provider took the message: the request was written and then the
   * connection broke or timed out, or the provider answered a 5xx that may still have sent it.
   */
  readonly unknown: boolean;

  constructor(
    message: string,
    options?: { cause?: unknown; status?: number | undefined; rejected?: boolean; unknown?: boolean },
  ) {
    super(message, options);
    this.status = options?.status;
    this.rejected = options?.rejected ?? false;
    this.unknown = options?.unknown ?? false;
  }
}

/** "1 minute", "10 minutes": an OTP lifetime as the user reads it, rounded up. */
export function lifetimeText(expiresInSeconds: number): string {
  const minutes = Math.max(1, Math.ceil(expiresInSeconds / 60));
  return minutes === 1 ? '1 minute' : `${minutes} minutes`;
}

const NOTICE_TEXT: Record<NoticeEvent, string> = {
  'device.added': 'A new trusted device was added to your account',
  'passkey.added': 'A new passkey was added to your account',
  'pin.set': 'A PIN was set on your account',
  'pin.changed': 'The PIN of your account was changed',
  signed_out_everywhere: 'Your account was signed out on every device',
};

/** The words of a notice: one line for SMS, subject and body for e-mail. */
export function noticeText(notice: SecurityNotice): { subject: string; text: string } {
  const what = NOTICE_TEXT[notice.event];
  return {
    subject: `${notice.projectName}: ${what.charAt(0).toLowerCase()}${what.slice(1)}`,
    text: `${what} (${notice.projectName}) at ${notice.at.toISOString().replace('T', ' ').slice(0, 16)} UTC. If this was not you, sign in with a one-time code and sign out everywhere.`,
  };
}
