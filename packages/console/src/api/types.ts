import type {
  AuditEvent as AdminAuditEvent,
  Device as AdminDevice,
  OAuthClient as AdminOAuthClient,
  Passkey as AdminPasskey,
  Session as AdminSession,
  SigningKey as AdminSigningKey,
  Stats as AdminStats,
  User as AdminUser,
  Webhook as AdminWebhook,
  WebhookDelivery as AdminWebhookDelivery,
} from '@tessera/admin';

// The service's own shapes, from its OpenAPI document through @tessera/admin: they cannot drift.
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

export type User = AdminUser;

export type Session = AdminSession;

export type Device = AdminDevice;

export type Passkey = AdminPasskey;

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

export type AuditEvent = AdminAuditEvent;

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

export type OAuthClient = AdminOAuthClient;

export type SigningKey = AdminSigningKey;

export type Webhook = AdminWebhook;

export type WebhookDelivery = AdminWebhookDelivery;

export type StatsBucket = AdminStats['buckets'][number];

export type Stats = AdminStats;
