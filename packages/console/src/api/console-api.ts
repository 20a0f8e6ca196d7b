import type { Http } from './http.js';
import type {
  AuditEvent,
  Branding,
  Device,
  Me,
  OAuthClient,
  Passkey,
  PinState,
  Project,
  Session,
  SigningKey,
  Stats,
  User,
  UserDetail,
  Webhook,
  WebhookDelivery,
} from './types.js';

/** Filters of the audit log. */
export interface AuditFilters {
  type?: string | undefined;
  user_id?: string | undefined;
  from?: string | undefined;
  to?: string | undefined;
  before?: string | undefined;
  limit?: number | undefined;
}

/** The calls the console's pages make, each for one project (`Tessera-Project`) or the service. */
export function consoleApi(http: Http) {
  const enc = encodeURIComponent;
  return {
    me: () => http.call<Me>('GET', '/v1/console/me'),
    projects: {
      list: () => http.call<{ projects: Project[] }>('GET', '/v1/operator/projects'),
      get: (project: string) => http.call<Project>('GET', `/v1/operator/projects/${enc(project)}`),
      update: (project: string, changes: Partial<Project> & Record<string, unknown>) =>
        http.call<Project>('PATCH', `/v1/operator/projects/${enc(project)}`, { body: changes }),
      create: (body: { name: string; origins: string[] }) =>
        http.call<Project & { api_key_secret: string }>('POST', '/v1/operator/projects', { body }),
      rotateSecret: (project: string) =>
        http.call<{ api_key_id: string; api_key_secret: string }>(
          'POST',
          `/v1/operator/projects/${enc(project)}/rotate-secret`,
        ),
    },
    stats: (project: string, query: { from: string; to: string; bucket: 'hour' | 'day' }) =>
      http.call<Stats>('GET', '/v1/stats', { project, query }),
    users: {
      search: (project: string, query: string) =>
        http.call<{ users: User[] }>('GET', '/v1/users', { project, query: { query } }),
      get: (project: string, userId: string) =>
        http.call<UserDetail>('GET', `/v1/users/${enc(userId)}`, { project }),
      sessions: (project: string, userId: string) =>
        http.call<{ sessions: Session[] }>('GET', `/v1/users/${enc(userId)}/sessions`, { project }),
      devices: (project: string, userId: string) =>
        http.call<{ devices: Device[] }>('GET', `/v1/users/${enc(userId)}/devices`, { project }),
      passkeys: (project: string, userId: string) =>
        http.call<{ passkeys: Passkey[] }>('GET', `/v1/users/${enc(userId)}/passkeys`, { project }),
      pin: (project: string, userId: string) =>
        http.call<PinState>('GET', `/v1/users/${enc(userId)}/pin`, { project }),
      unlockPin: (project: string, userId: string) =>
        http.call<void>('POST', `/v1/users/${enc(userId)}/pin/unlock`, { project }),
      revokeSessions: (project: string, userId: string) =>
        http.call<void>('POST', `/v1/users/${enc(userId)}/sessions/revoke`, { project }),
      removeDevice: (project: string, userId: string, deviceId: string) =>
        http.call<void>('DELETE', `/v1/users/${enc(userId)}/devices/${enc(deviceId)}`, { project }),
      removePasskey: (project: string, userId: string, passkeyId: string) =>
        http.call<void>('DELETE', `/v1/users/${enc(userId)}/passkeys/${enc(passkeyId)}`, { project }),
      claims: (project: string, userId: string) =>
        http.call<{ claims: Record<string, unknown> }>('GET', `/v1/users/${enc(userId)}/claims`, { project }),
      setClaims: (project: string, userId: string, claims: Record<string, unknown>) =>
        http.call<{ claims: Record<string, unknown> }>('PUT', `/v1/users/${enc(userId)}/claims`, {
          project,
          body: { claims },
        }),
      delete: (project: string, userId: string) =>
        http.call<void>('DELETE', `/v1/users/${enc(userId)}`, { project }),
    },
    audit: {
      list: (project: string, filters: AuditFilters) =>
        http.call<{ events: AuditEvent[]; next_before: string | null }>('GET', '/v1/audit', {
          project,
          query: { ...filters },
        }),
      csv: (project: string, filters: AuditFilters) =>
        http.call<string>('GET', '/v1/audit', { project, query: { ...filters, format: 'csv' }, as: 'text' }),
    },
    clients: {
      list: (project: string) => http.call<{ clients: OAuthClient[] }>('GET', '/v1/clients', { project }),
      create: (project: string, body: Record<string, unknown>) =>
        http.call<OAuthClient>('POST', '/v1/clients', { project, body }),
      update: (project: string, clientId: string, body: Record<string, unknown>) =>
        http.call<OAuthClient>('PUT', `/v1/clients/${enc(clientId)}`, { project, body }),
      delete: (project: string, clientId: string) =>
        http.call<void>('DELETE', `/v1/clients/${enc(clientId)}`, { project }),
    },
    branding: {
      get: (project: string) => http.call<Branding>('GET', '/v1/project/branding', { project }),
      set: (project: string, branding: Branding) =>
        http.call<Branding>('PUT', '/v1/project/branding', { project, body: branding }),
    },
    keys: {
      list: () => http.call<{ keys: SigningKey[] }>('GET', '/v1/operator/keys'),
      rotate: () => http.call<{ keys: SigningKey[] }>('POST', '/v1/operator/keys/rotate'),
    },
    webhooks: {
      list: (project: string) => http.call<{ webhooks: Webhook[] }>('GET', '/v1/webhooks', { project }),
      get: (project: string, id: string) => http.call<Webhook>('GET', `/v1/webhooks/${enc(id)}`, { project }),
      create: (project: string, body: { url: string; event_types: string[] }) =>
        http.call<Webhook>('POST', '/v1/webhooks', { project, body }),
      delete: (project: string, id: string) =>
        http.call<void>('DELETE', `/v1/webhooks/${enc(id)}`, { project }),
      deliveries: (project: string, id: string) =>
        http.call<{ deliveries: WebhookDelivery[] }>('GET', `/v1/webhooks/${enc(id)}/deliveries`, {
          project,
        }),
      redeliver: (project: string, id: string, deliveryId: string) =>
        http.call<unknown>('POST', `/v1/webhooks/${enc(id)}/deliveries/${enc(deliveryId)}/redeliver`, {
          project,
        }),
      test: (project: string, id: string) =>
        http.call<unknown>('POST', `/v1/webhooks/${enc(id)}/test`, { project }),
    },
  };
}

export type ConsoleApi = ReturnType<typeof consoleApi>;
