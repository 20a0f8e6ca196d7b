/** The roles a console member may hold (docs/CONSOLE.md). */
export type Role = 'operator' | 'admin' | 'support' | 'viewer';

/** A project as the console lists it. */
export interface ProjectSummary {
  api_key_id: string;
  name: string;
}

/** The signed-in console member: who they are, and their role in each project they may open. */
export interface Me {
  user_id: string;
  identifier: string;
  /** True for an operator (every project, the signing keys). */
  operator: boolean;
  /** Each project the member may open, with their role there (an operator's is `operator`). */
  projects: Array<ProjectSummary & { role: Role }>;
}

export interface User {
  user_id: string;
  identifier: string;
  identifier_type: string;
  client_user_id: string;
  created_at: string | null;
  last_sign_in_at: string | null;
}

export interface Session {
  session_id: string;
  auth_method: string;
  device_id: string | null;
  client_id?: string | null;
  ip_network?: string | null;
  created_at: string | null;
  last_refreshed_at: string | null;
  expires_at: string | null;
  revoked_at: string | null;
}

export interface Device {
  device_id: string;
  name: string;
  created_at: string;
  last_used_at: string | null;
}

export interface Passkey {
  passkey_id: string;
  name: string;
  device_type: string;
  backed_up: boolean;
  created_at: string;
  last_used_at: string | null;
}

export interface PinState {
  set: boolean;
  locked: boolean;
}

/** A user's page: the user, their methods and sessions. */
export interface UserDetail extends User {
  devices: Device[];
  passkeys: Passkey[];
  pin: PinState;
  sessions: Session[];
}

export interface AuditEvent {
  event_id: string;
  type: string;
  user_id: string | null;
  data: Record<string, unknown>;
  created_at: string;
}

export interface Project {
  project_id: string;
  name: string;
  api_key_id: string;
  origins: string[];
  rp_id: string | null;
  numeric_auth_time: boolean;
  device_requires_pin: boolean;
  created_at: string;
  secret_rotated_at: string | null;
  message_templates: MessageTemplates | null;
  branding: Branding | null;
  open_registration: boolean;
  sms_countries?: string[];
  access_token_ttl?: number | null;
  id_token_ttl?: number | null;
  refresh_token_ttl?: number | null;
}

export interface Branding {
  [name: string]: unknown;
  display_name?: string | null;
  logo_url?: string | null;
  primary_color?: string | null;
  primary_color_dark?: string | null;
}

export type TemplateField = 'email_subject' | 'email_text' | 'email_html' | 'sms_text';
export interface MessageTemplates {
  brand?: string;
  default_locale?: string;
  locales: Record<string, Partial<Record<TemplateField, string>>>;
}

export interface OAuthClient {
  client_id: string;
  client_name?: string;
  logo_uri?: string;
  redirect_uris: string[];
  post_logout_redirect_uris?: string[];
  token_endpoint_auth_method?: string;
  grant_types?: string[];
  scope?: string;
  first_party?: boolean;
  client_id_issued_at?: number;
  client_secret?: string;
}

export interface SigningKey {
  kid: string;
  alg?: string;
  /** next: published, signs from `activate_at`; active: signs; retiring: published until `retire_at`. */
  state: string;
  created_at: string;
  activate_at: string | null;
  activated_at: string | null;
  retire_at: string | null;
}

export interface Webhook {
  webhook_id: string;
  url: string;
  event_types: string[];
  created_at: string | null;
  last_status: string | null;
  last_attempt_at: string | null;
  secret?: string;
}

export interface WebhookDelivery {
  delivery_id: string;
  event_type: string;
  status: string;
  attempts: number;
  last_status_code: number | null;
  last_error: string | null;
  next_attempt_at: string | null;
  created_at: string | null;
  delivered_at: string | null;
}

/** One bucket of the overview's series. */
export interface StatsBucket {
  start: string;
  sign_ins: Record<string, number>;
  failures: number;
  otp_sends: number;
  reuse_detections: number;
}

export interface Stats {
  from: string;
  to: string;
  bucket: 'hour' | 'day';
  buckets: StatsBucket[];
  otp_budget?: { used: number; limit: number | null } | null;
}
