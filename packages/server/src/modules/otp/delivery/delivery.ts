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
}

/** Hands OTP messages to a provider (SMTP server, SMS gateway, development outbox). */
export interface Delivery {
  /** Resolves once the provider has accepted the message; rejects with a {@link DeliveryError}. */
  send(message: OtpMessage): Promise<void>;
  /** Releases connections; `send` must not be called afterwards. */
  close(): Promise<void>;
}

/**
 * Thrown when a provider cannot take the message. `message` is safe to log: no code, no
 * credentials, no recipient. The provider's own error stays in `cause` for diagnosis.
 */
export class DeliveryError extends Error {
  override name = 'DeliveryError';

  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}

/** "1 minute", "10 minutes": an OTP lifetime as the user reads it, rounded up. */
export function lifetimeText(expiresInSeconds: number): string {
  const minutes = Math.max(1, Math.ceil(expiresInSeconds / 60));
  return minutes === 1 ? '1 minute' : `${minutes} minutes`;
}
