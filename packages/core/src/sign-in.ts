import type { AuthMethod, OAuthTokenBundle } from './tokens.js';

/**
 * The answer of every sign-in completion (`/v1/auth/otp/complete`, `/v1/auth/device/complete`,
 * `/v1/auth/pin/complete`, `/v1/auth/biometric/complete`): the token bundle when
 * `getOAuthToken` was true, otherwise only who signed in and how.
 */
export type SignInResult = { oauth_token: OAuthTokenBundle } | { user_id: string; auth_method: AuthMethod };

/** `POST /v1/auth/otp/start`: the challenge the code belongs to. */
export interface OtpStarted {
  challenge_id: string;
  channel: 'email' | 'sms';
  /** Seconds the code stays valid. */
  expires_in: number;
  /** Seconds before another code may be asked for the same identifier. */
  resend_after: number;
}

/** A nonce for a device to sign: device registration, device and PIN sign-in starts. */
export interface DeviceChallenge {
  challenge_id: string;
  nonce: string;
  /** Seconds the challenge stays valid. */
  expires_in: number;
}

/** A trusted device as `GET /v1/devices` lists it. */
export interface DeviceView {
  device_id: string;
  name: string;
  created_at: string;
  last_used_at: string | null;
}

/** A passkey as `GET /v1/biometrics` lists it. */
export interface PasskeyView {
  passkey_id: string;
  name: string;
  device_type: string;
  backed_up: boolean;
  created_at: string;
  last_used_at: string | null;
}
