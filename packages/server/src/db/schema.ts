import type { JsonWebKey } from 'node:crypto';
import type { Generated, Insertable, Selectable } from 'kysely';

// Timestamps are Unix milliseconds (bigint in PostgreSQL, parsed to number; integer in SQLite).

export interface ProjectTable {
  id: string;
  name: string;
  api_key_id: string;
  secret_hash: string;
  /** JSON array of allowed browser origins. */
  origins: string;
  rp_id: string | null;
  /** 1 = emit `auth_time` as a number (strict OIDC clients), 0 = a string of digits as specified. */
  numeric_auth_time: number;
  /** 1 = device sign-in needs the PIN (PIN sign-in only); 0 = a trusted device may sign in alone. */
  device_requires_pin: number;
  /** JSON array of ISO 3166-1 alpha-2 codes (or `*`) SMS codes may go to; null = TESSERA_SMS_COUNTRIES. */
  sms_countries: string | null;
  /** JSON of the project's message templates (modules/otp/delivery/templates); null: built-in texts. */
  message_templates: string | null;
  /** JSON of the project's sign-in branding (modules/projects/branding.ts); null: none. */
  branding: string | null;
  /** 1 = open Dynamic Client Registration (RFC 7591) at the project's registration endpoint. */
  oauth_dcr: Generated<number>;
  /** Reserved for Client ID Metadata Documents (not built yet: nothing reads or sets it). */
  oauth_cimd: Generated<number>;
  /** 1 = the built-in console project (issue 33), set only when the server creates it. */
  console: Generated<number>;
  /** The project's token lifetimes in seconds; null = the server's (never longer: `lifetimesOf`). */
  access_token_ttl: number | null;
  id_token_ttl: number | null;
  refresh_token_ttl: number | null;
  created_at: number;
  secret_rotated_at: number | null;
}

/** A console role (docs/CONSOLE.md). */
export type ConsoleRole = 'operator' | 'admin' | 'support' | 'viewer';

/** Who may use the console, with which role, in which project (null: every project, operators). */
export interface ConsoleMemberTable {
  id: string;
  /** Normalized as OTP identifiers are (lower-cased e-mail address, E.164 number). */
  identifier: string;
  /** The console project's user, once known. */
  user_id: string | null;
  role: ConsoleRole;
  project_id: string | null;
  created_at: number;
}

/** next → active → retiring → retired */
export type SigningKeyStatus = 'next' | 'active' | 'retiring' | 'retired';

export interface SigningKeyTable {
  kid: string;
  alg: string;
  public_jwk: string;
  /** AES-256-GCM of the private JWK under the master key: base64url(iv ‖ ciphertext ‖ tag). */
  private_enc: string;
  status: SigningKeyStatus;
  created_at: number;
  activate_at: number | null;
  activated_at: number | null;
  retire_at: number | null;
}

export interface UserTable {
  id: string;
  project_id: string;
  identifier: string;
  identifier_type: 'email' | 'phone';
  client_user_id: string | null;
  created_at: number;
  last_sign_in_at: number | null;
}

export interface OtpChallengeTable {
  id: string;
  project_id: string;
  identifier: string;
  channel: 'email' | 'sms';
  code_hash: string;
  attempts: Generated<number>;
  max_attempts: number;
  created_at: number;
  expires_at: number;
  consumed_at: number | null;
}

export interface RateLimitTable {
  key: string;
  count: number;
  reset_at: number;
}

export interface SessionTable {
  id: string;
  project_id: string;
  user_id: string;
  auth_method: string;
  auth_time: number;
  device_id: string | null;
  /** The passkey of a BIOMETRIC sign-in: removing it ends the session. */
  passkey_id: string | null;
  created_at: number;
  expires_at: number;
  last_refreshed_at: number | null;
  revoked_at: number | null;
  revoked_reason: string | null;
  /** The OAuth client (`oauth_clients.client_id`) whose code exchange started it; null otherwise. */
  client_id: string | null;
  /** The scopes granted to that client (space-separated); null for other sessions. */
  scope: string | null;
  /** The RFC 8707 resource its access tokens are for (their `aud`); null: the project's API key id. */
  resource: string | null;
  /** The network it was started from: an IPv4 /24 or IPv6 /48 (`sessionNetwork`); null if unknown. */
  ip_network: string | null;
}

export interface RefreshTokenTable {
  id: string;
  session_id: string;
  secret_hash: string;
  created_at: number;
  expires_at: number;
  rotated_at: number | null;
  /** The successor token, encrypted under a key derived from this token's secret (grace-window reuse). */
  successor_enc: string | null;
  /** Hash of the client (IP and User-Agent) whose grant rotated this token: the grace answer goes only to it. */
  rotated_by: string | null;
}

export interface DeviceTable {
  id: string;
  project_id: string;
  user_id: string;
  /** The device's public P-256 JWK (x, y only). */
  public_jwk: string;
  /** RFC 7638 thumbprint: one registration per key and project. */
  thumbprint: string;
  name: string;
  created_at: number;
  last_used_at: number | null;
}

export interface PinTable {
  user_id: string;
  /** scrypt$N$r$p$salt$hash of HMAC(pepper, pin). */
  hash: string;
  failed_attempts: number;
  locked_at: number | null;
  updated_at: number;
}

export interface PasskeyTable {
  /** The credential id, base64url. */
  id: string;
  project_id: string;
  user_id: string;
  /** COSE public key, base64url. */
  public_key: string;
  counter: number;
  transports: string;
  device_type: string;
  backed_up: number;
  aaguid: string | null;
  name: string;
  created_at: number;
  last_used_at: number | null;
}

export interface ChallengeTable {
  id: string;
  project_id: string;
  /** device-register | device-signin | pin-signin | passkey-register | passkey-signin */
  kind: string;
  user_id: string | null;
  device_id: string | null;
  /** The nonce or WebAuthn challenge, base64url. */
  challenge: string;
  created_at: number;
  expires_at: number;
  consumed_at: number | null;
}

export interface AuditEventTable {
  id: string;
  project_id: string;
  user_id: string | null;
  type: string;
  /** JSON; never a secret, never an identifier the integrator does not already know. */
  data: string;
  ip: string | null;
  created_at: number;
}

export interface UserClaimsTable {
  user_id: string;
  project_id: string;
  /** JSON object of the integrator's custom claims. */
  claims: string;
  updated_at: number;
}

export interface WebhookEndpointTable {
  id: string;
  project_id: string;
  url: string;
  /** The signing secret, sealed under the master key (it must be usable, so it is not hashed). */
  secret_enc: string;
  /** JSON array of event types, or ["*"]. */
  event_types: string;
  created_at: number;
  last_status: string | null;
  last_attempt_at: number | null;
}

export interface WebhookDeliveryTable {
  id: string;
  endpoint_id: string;
  project_id: string;
  event_type: string;
  payload: string;
  /** pending | delivered | failed */
  status: string;
  attempts: number;
  next_attempt_at: number;
  /** A worker's claim on the delivery; expires so a crashed worker's deliveries are retried. */
  locked_until: number | null;
  last_status_code: number | null;
  last_error: string | null;
  created_at: number;
  delivered_at: number | null;
}

export interface SessionRevocationTable {
  session_id: string;
  project_id: string;
  revoked_at: number;
}

export interface OAuthClientTable {
  id: string;
  project_id: string;
  client_id: string;
  /** SHA-256 of a confidential client's secret; null for a public client. */
  secret_hash: string | null;
  token_endpoint_auth_method: 'none' | 'client_secret_basic' | 'client_secret_post';
  name: string;
  logo_uri: string | null;
  /** JSON array. */
  redirect_uris: string;
  /** JSON array. */
  post_logout_redirect_uris: string;
  /** JSON array. */
  grant_types: string;
  /** Space-separated scopes the client may ask for. */
  scope: string;
  first_party: number;
  /** 1 = registered through the open registration endpoint (third-party, expires when unused). */
  dynamic: number;
  /** When an authorization request last named it (null: never). */
  last_used_at: number | null;
  created_at: number;
  updated_at: number;
}

export interface OAuthRequestTable {
  id: string;
  project_id: string;
  client_id: string;
  /** JSON of the validated authorization request. */
  params: string;
  /** SHA-256 of the browser-binding cookie set when the request was made. */
  browser_hash: string;
  created_at: number;
  expires_at: number;
}

export interface OAuthCodeTable {
  /** SHA-256 of the code. */
  id: string;
  project_id: string;
  client_id: string;
  redirect_uri: string;
  code_challenge: string;
  nonce: string | null;
  scope: string;
  resource: string | null;
  user_id: string;
  /** The hosted session's Tessera session. */
  session_id: string;
  /** The session the exchange started: revoked when the code is presented again. */
  issued_session_id: string | null;
  created_at: number;
  expires_at: number;
  used_at: number | null;
}

export interface OAuthBrowserSessionTable {
  id: string;
  secret_hash: string;
  project_id: string;
  session_id: string;
  created_at: number;
  expires_at: number;
  ended_at: number | null;
}

export interface OAuthConsentTable {
  project_id: string;
  user_id: string;
  client_id: string;
  scope: string;
  created_at: number;
  updated_at: number;
}

/** One row (id 1): a random id made with the database (migration 016); signing-key ids include it. */
export interface DatabaseIdentityTable {
  id: number;
  database_id: string;
  created_at: number;
}

export interface Database {
  projects: ProjectTable;
  signing_keys: SigningKeyTable;
  users: UserTable;
  otp_challenges: OtpChallengeTable;
  rate_limits: RateLimitTable;
  sessions: SessionTable;
  refresh_tokens: RefreshTokenTable;
  devices: DeviceTable;
  pins: PinTable;
  passkeys: PasskeyTable;
  challenges: ChallengeTable;
  audit_events: AuditEventTable;
  user_claims: UserClaimsTable;
  session_revocations: SessionRevocationTable;
  webhook_endpoints: WebhookEndpointTable;
  webhook_deliveries: WebhookDeliveryTable;
  oauth_clients: OAuthClientTable;
  oauth_requests: OAuthRequestTable;
  oauth_codes: OAuthCodeTable;
  oauth_browser_sessions: OAuthBrowserSessionTable;
  oauth_consents: OAuthConsentTable;
  database_identity: DatabaseIdentityTable;
  console_members: ConsoleMemberTable;
}

// Rows as stored; the repositories turn JSON columns into domain records (Project,
// WebhookEndpoint, StoredSigningKey, StoredEvent, custom claims).
export type WebhookEndpointRow = Selectable<WebhookEndpointTable>;
export type WebhookDeliveryRow = Selectable<WebhookDeliveryTable>;

export type DeviceRow = Selectable<DeviceTable>;
/** A trusted device as services see it: its public key parsed once, by the repository. */
export type Device = Omit<DeviceRow, 'public_jwk'> & { public_jwk: JsonWebKey };
export type PasskeyRow = Selectable<PasskeyTable>;
/** A passkey as services see it: its transports parsed once, by the repository. */
export type Passkey = Omit<PasskeyRow, 'transports'> & { transports: string[] };
export type Challenge = Selectable<ChallengeTable>;

export type ProjectRow = Selectable<ProjectTable>;
export type User = Selectable<UserTable>;
export type Session = Selectable<SessionTable>;
export type NewSession = Insertable<SessionTable>;
export type SigningKeyRow = Selectable<SigningKeyTable>;
