import type { Config } from '../../config/index.js';
import type { ProjectRow } from '../../db/schema.js';
import type { MessageTemplates } from '../otp/delivery/templates/types.js';
import type { ProjectBranding } from './branding.js';

/** A project as the services see it: its allowed origins parsed once, by the repository. */
export interface Project
  extends Omit<ProjectRow, 'origins' | 'sms_countries' | 'message_templates' | 'branding'> {
  /** Allowed browser origins (scheme://host[:port]), exact match. */
  readonly origins: readonly string[];
  /** Countries SMS codes may go to (ISO 3166-1 alpha-2, `*` for all); null: the server's default. */
  readonly sms_countries: readonly string[] | null;
  /** The project's own OTP message texts and brand; null: the built-in texts. */
  readonly message_templates: MessageTemplates | null;
  /** The project's branding on the sign-in UI; null: none. */
  readonly branding: ProjectBranding | null;
}

export function toProject(row: ProjectRow): Project {
  return {
    ...row,
    origins: JSON.parse(row.origins) as string[],
    sms_countries: row.sms_countries === null ? null : (JSON.parse(row.sms_countries) as string[]),
    message_templates:
      row.message_templates === null ? null : (JSON.parse(row.message_templates) as MessageTemplates),
    branding: row.branding == null ? null : (JSON.parse(row.branding) as ProjectBranding),
  };
}

/**
 * Whether a browser request from `origin` may act for `project`: one of its origins, or the
 * issuer's own (`hostedOrigin`: Tessera's hosted sign-in pages, issue 31).
 */
export function originAllowed(project: Project, origin: string, hostedOrigin?: string): boolean {
  return project.origins.includes(origin) || (hostedOrigin !== undefined && origin === hostedOrigin);
}

/**
 * What a project follows where it sets nothing of its own: the server's configuration
 * (TESSERA_SMS_COUNTRIES, TESSERA_*_TTL). The token lifetimes are also the longest a project may set.
 */
export interface ServerSettings {
  /** Whether this server can send SMS codes at all (an SMS provider, or development delivery). */
  sms_enabled: boolean;
  sms_countries: string[];
  access_token_ttl: number;
  id_token_ttl: number;
  refresh_token_ttl: number;
}

export function serverSettings(config: Readonly<Config>): ServerSettings {
  return {
    sms_enabled: config.delivery.mode === 'dev' || config.delivery.smsProvider !== undefined,
    sms_countries: [...config.otpSending.smsCountries],
    access_token_ttl: config.accessTokenTtl,
    id_token_ttl: config.idTokenTtl,
    refresh_token_ttl: config.refreshTokenTtl,
  };
}

/** The lifetimes in seconds of the tokens minted for a project. */
export interface TokenLifetimes {
  access: number;
  id: number;
  refresh: number;
}

/**
 * A project's token lifetimes: its own where it set them, the server's otherwise, and never longer
 * than the server's (a server whose TESSERA_*_TTL was lowered since caps what projects had set).
 * Revocations are kept, and retired signing keys published, for the server's lifetimes: no token
 * may outlive them.
 */
export function lifetimesOf(
  project: Pick<Project, 'access_token_ttl' | 'id_token_ttl' | 'refresh_token_ttl'>,
  config: Pick<Config, 'accessTokenTtl' | 'idTokenTtl' | 'refreshTokenTtl'>,
): TokenLifetimes {
  const own = (value: number | null, server: number) => (value === null ? server : Math.min(value, server));
  return {
    access: own(project.access_token_ttl, config.accessTokenTtl),
    id: own(project.id_token_ttl, config.idTokenTtl),
    refresh: own(project.refresh_token_ttl, config.refreshTokenTtl),
  };
}

/** A project as operators see it (CLI `--json`, operator API): never its secret or its hash. */
export interface ProjectView {
  project_id: string;
  name: string;
  api_key_id: string;
  origins: string[];
  rp_id: string | null;
  numeric_auth_time: boolean;
  device_requires_pin: boolean;
  created_at: string;
  secret_rotated_at: string | null;
  /** The project's own message texts (null: built-in). */
  message_templates: MessageTemplates | null;
  /** The project's branding on the sign-in UI (null: none). */
  branding: ProjectBranding | null;
  /** Anyone may register an OAuth client (RFC 7591) at the project's registration endpoint. */
  open_registration: boolean;
  /** A client may name itself by the HTTPS URL of its Client ID Metadata Document. */
  client_id_metadata_documents: boolean;
  /** Countries SMS codes may go to (`*`: all); null: the server's (`server.sms_countries`). */
  sms_countries: string[] | null;
  /** The project's token lifetimes in seconds; null: the server's (`server`), the most it may set. */
  access_token_ttl: number | null;
  id_token_ttl: number | null;
  refresh_token_ttl: number | null;
  /** What the project follows where it sets nothing, and the longest lifetimes it may set. */
  server: ServerSettings;
}

export function projectView(project: Project, server: ServerSettings): ProjectView {
  return {
    project_id: project.id,
    name: project.name,
    api_key_id: project.api_key_id,
    origins: [...project.origins],
    rp_id: project.rp_id,
    numeric_auth_time: project.numeric_auth_time === 1,
    device_requires_pin: project.device_requires_pin === 1,
    created_at: new Date(project.created_at).toISOString(),
    secret_rotated_at:
      project.secret_rotated_at === null ? null : new Date(project.secret_rotated_at).toISOString(),
    message_templates: project.message_templates,
    branding: project.branding,
    open_registration: project.oauth_dcr === 1,
    client_id_metadata_documents: project.oauth_cimd === 1,
    sms_countries: project.sms_countries === null ? null : [...project.sms_countries],
    access_token_ttl: project.access_token_ttl,
    id_token_ttl: project.id_token_ttl,
    refresh_token_ttl: project.refresh_token_ttl,
    server,
  };
}
