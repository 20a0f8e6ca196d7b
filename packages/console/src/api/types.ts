import type {
  AuditEvent as AdminAuditEvent,
  Branding as AdminBranding,
  Device as AdminDevice,
  OAuthClient as AdminOAuthClient,
  Passkey as AdminPasskey,
  Project as AdminProject,
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

export type Project = AdminProject;

/** A project's branding as stored (the editor sends only the members it sets). */
export type Branding = AdminBranding;

/** A project's own OTP message texts. */
export type MessageTemplates = NonNullable<Project['message_templates']>;

export type TemplateField = keyof MessageTemplates['locales'][string];

export type OAuthClient = AdminOAuthClient;

export type SigningKey = AdminSigningKey;

export type Webhook = AdminWebhook;

export type WebhookDelivery = AdminWebhookDelivery;

export type StatsBucket = AdminStats['buckets'][number];

export type Stats = AdminStats;
