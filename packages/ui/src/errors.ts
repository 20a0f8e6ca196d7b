import type { ClientErrorCode, TesseraClientError } from '@tessera/client';
import type { Messages } from './messages/index.js';

/** Which text a failure shows, and what the form does next. */
export interface ErrorEntry {
  /** The message (`messages[text]`), saying what happened and what to do next. */
  text: keyof Messages;
  /** With `attemptsLeft` from the service: this text instead, naming the tries left. */
  left?: keyof Messages;
  /** With `retryAfter`: this text instead of `text`, naming the seconds (`{s}`). */
  wait?: keyof Messages;
  /** The step to go to: the code form is of no use once its code has expired, say. */
  go?: 'identifier' | 'pin';
}

/**
 * Every error code `@tessera/client` can throw (the service's codes and the SDK's own), mapped
 * to a message a person understands. A `Record` over the codes: a new code fails to compile until
 * it is given a message here. Nothing shows a raw code.
 */
export const ERROR_TABLE: Readonly<Record<ClientErrorCode, ErrorEntry>> = {
  invalid_request: { text: 'errGeneric' },
  payload_too_large: { text: 'errGeneric' },
  unsupported_media_type: { text: 'errGeneric' },
  not_found: { text: 'errGeneric' },
  method_not_allowed: { text: 'errGeneric' },
  missing_api_key: { text: 'errNotSetUp' },
  unknown_api_key: { text: 'errNotSetUp' },
  invalid_client: { text: 'errNotSetUp' },
  origin_not_allowed: { text: 'errOrigin' },
  invalid_identifier: { text: 'errIdentifier' },
  invalid_code: { text: 'errCode', left: 'errCodeLeft' },
  challenge_not_found: { text: 'errCodeExpired' },
  challenge_expired: { text: 'errCodeExpired' },
  challenge_used: { text: 'errCodeExpired' },
  too_many_attempts: { text: 'errCodeAttempts' },
  rate_limited: { text: 'errRateShort', wait: 'errRate' },
  resend_too_soon: { text: 'errRateShort', wait: 'errResend' },
  delivery_failed: { text: 'errDelivery' },
  country_not_allowed: { text: 'errCountry' },
  captcha_required: { text: 'errCaptcha' },
  captcha_failed: { text: 'errCaptcha' },
  unauthorized: { text: 'errSession', go: 'identifier' },
  invalid_token: { text: 'errSession', go: 'identifier' },
  forbidden: { text: 'errForbidden' },
  conflict: { text: 'errGeneric' },
  invalid_public_key: { text: 'errDeviceCheck', go: 'identifier' },
  device_already_registered: { text: 'errDeviceKnown' },
  device_not_found: { text: 'errDevice', go: 'identifier' },
  invalid_signature: { text: 'errDeviceCheck', go: 'identifier' },
  weak_pin: { text: 'errWeakPin' },
  invalid_pin: { text: 'errPin', left: 'errPinLeft' },
  pin_locked: { text: 'errPinLocked', go: 'identifier' },
  pin_required: { text: 'errPinRequired', go: 'pin' },
  pin_not_set: { text: 'errPinNotSet', go: 'identifier' },
  reauthentication_required: { text: 'errReauth', go: 'identifier' },
  passkey_verification_failed: { text: 'errPasskey' },
  passkey_not_found: { text: 'errPasskey' },
  user_verification_required: { text: 'errPasskeyUv' },
  user_not_found: { text: 'errSession', go: 'identifier' },
  session_not_found: { text: 'errSession', go: 'identifier' },
  reserved_claim: { text: 'errGeneric' },
  invalid_claims: { text: 'errGeneric' },
  claims_too_large: { text: 'errGeneric' },
  service_unavailable: { text: 'errBusy' },
  internal_error: { text: 'errGeneric' },
  network_error: { text: 'errNetwork' },
  not_signed_in: { text: 'errSession', go: 'identifier' },
  no_device_key: { text: 'errDevice', go: 'identifier' },
  webauthn_unavailable: { text: 'errPasskeyUnavailable' },
  webauthn_cancelled: { text: 'errPasskeyCancel' },
  passkey_not_available: { text: 'errPasskeyNone' },
  webauthn_origin_mismatch: { text: 'errPasskeyOrigin' },
  lock_timeout: { text: 'errTabs' },
};

/** What a failure looks like to the element: a code (for events) and the entry to show. */
export interface Failure {
  code: string;
  entry: ErrorEntry;
  retryAfter: number | undefined;
  attemptsLeft: number | undefined;
  /** The client's public detail, for developers (never shown). */
  detail: string;
}

/** Any thrown value as a failure: an unknown code or a non-SDK error shows the generic message. */
export function toFailure(error: unknown): Failure {
  const e = (typeof error === 'object' && error !== null ? error : {}) as Partial<TesseraClientError>;
  const code = typeof e.code === 'string' ? e.code : 'internal_error';
  return {
    code,
    entry: ERROR_TABLE[code as ClientErrorCode] ?? { text: 'errGeneric' },
    retryAfter: typeof e.retryAfter === 'number' ? e.retryAfter : undefined,
    attemptsLeft: typeof e.attemptsLeft === 'number' ? e.attemptsLeft : undefined,
    detail: typeof e.detail === 'string' ? e.detail : String(error),
  };
}

/** The message of a failure in the given texts, placeholders filled in. */
export function failureText(failure: Failure, t: Messages, name: string): string {
  const { entry, retryAfter, attemptsLeft } = failure;
  const key =
    (retryAfter !== undefined && entry.wait) || (attemptsLeft !== undefined && entry.left) || entry.text;
  return t[key]
    .replace('{s}', String(Math.max(1, Math.ceil(retryAfter ?? 0))))
    .replace('{n}', String(attemptsLeft ?? ''))
    .replace('{name}', name);
}
