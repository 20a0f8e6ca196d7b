import { type AuditFilter, createTesseraAdmin, type TesseraAdmin } from '@tessera/admin';
import { ApiError } from './http.js';
import type { Branding, Me, PinState, Project, Session, Stats, User, UserDetail } from './types.js';

/** Filters of the audit log. */
export interface AuditFilters {
  type?: AuditFilter['type'] | undefined;
  user_id?: string | undefined;
  from?: string | undefined;
  to?: string | undefined;
  before?: string | undefined;
  limit?: number | undefined;
}

/** A query without its empty members (the service refuses an empty `from`). */
const defined = <T extends object>(query: T): T =>
  Object.fromEntries(Object.entries(query).filter(([, v]) => v !== undefined && v !== '')) as T;

/**
 * The calls the console's pages make, through `@tessera/admin` with the member's access token (and
 * `Tessera-Project` for the project a page shows); the service decides what their role allows.
 */
export function consoleApi(options: {
  issuer: string;
  /** The signed-in member's access token, or null once signed out. */
  accessToken(): Promise<string | null>;
  /** Called when the service answers 401: the member's session has ended. */
  onUnauthorized(): void;
}) {
  const token = async () => {
    const value = await options.accessToken();
    if (!value) {
      options.onUnauthorized();
      throw new ApiError(401, 'unauthorized', 'signed out');
    }
    return value;
  };
  const admin = createTesseraAdmin({ issuer: options.issuer, accessToken: token, retry: { retries: 1 } });
  const byProject = new Map<string, TesseraAdmin>();
  const of = (project: string) => {
    const scoped = byProject.get(project) ?? admin.forProject(project);
    byProject.set(project, scoped);
    return scoped;
  };
  /** A 401 from the service ends the console's session, whichever client made the call. */
  const guard = async <T>(call: Promise<T>): Promise<T> => {
    try {
      return await call;
    } catch (error) {
      if ((error as { status?: number }).status === 401) options.onUnauthorized();
      throw error;
    }
  };

  return {
    me: () => guard(admin.console.me()) as Promise<Me>,
    projects: {
      get: (project: string) => guard(admin.projects.get(project)) as Promise<Project>,
      update: (project: string, changes: Record<string, unknown>) =>
        guard(admin.projects.update(project, changes)) as Promise<Project>,
      create: (body: { name: string; origins: string[] }) => guard(admin.projects.create(body)),
      rotateSecret: (project: string) => guard(admin.projects.rotateSecret(project)),
    },
    stats: (project: string, query: { from: string; to: string; bucket: 'hour' | 'day' }) =>
      guard(of(project).stats.get(query)) as Promise<Stats>,
    users: {
      search: async (project: string, query: string) => ({
        users: (await guard(of(project).users.list({ query, limit: '50' }).toArray())) as User[],
      }),
      get: async (project: string, userId: string): Promise<UserDetail> => {
        const scoped = of(project);
        const [user, sessions, devices, passkeys, pin] = await guard(
          Promise.all([
            scoped.users.get(userId),
            scoped.sessions.list(userId).toArray(),
            scoped.devices.list(userId).toArray(),
            scoped.passkeys.list(userId).toArray(),
            scoped.pin.get(userId),
          ]),
        );
        return {
          ...(user as User),
          sessions: sessions as Session[],
          devices,
          passkeys,
          pin: pin as PinState,
        };
      },
      unlockPin: (project: string, userId: string) => guard(of(project).pin.unlock(userId)),
      revokeSessions: (project: string, userId: string) => guard(of(project).users.revokeSessions(userId)),
      removeDevice: (project: string, userId: string, deviceId: string) =>
        guard(of(project).devices.remove(userId, deviceId)),
      removePasskey: (project: string, userId: string, passkeyId: string) =>
        guard(of(project).passkeys.remove(userId, passkeyId)),
      claims: (project: string, userId: string) => guard(of(project).claims.get(userId)),
      setClaims: (project: string, userId: string, claims: Record<string, unknown>) =>
        guard(of(project).claims.set(userId, claims)),
      delete: (project: string, userId: string) => guard(of(project).users.delete(userId)),
    },
    audit: {
      list: (project: string, filters: AuditFilters) =>
        guard(
          of(project).audit.page(
            defined({ ...filters, limit: filters.limit === undefined ? undefined : String(filters.limit) }),
          ),
        ),
      csv: (project: string, filters: AuditFilters) =>
        guard(of(project).audit.export(defined({ ...filters, before: undefined, limit: undefined }))),
    },
    clients: {
      list: (project: string) => guard(of(project).clients.list().toArray()),
      create: (project: string, metadata: Record<string, unknown>) =>
        guard(of(project).clients.register(metadata)),
      update: (project: string, clientId: string, metadata: Record<string, unknown>) =>
        guard(of(project).clients.replace(clientId, metadata)),
      delete: (project: string, clientId: string) => guard(of(project).clients.delete(clientId)),
    },
    branding: {
      set: (project: string, branding: Branding) => guard(of(project).branding.set({ ...branding })),
    },
    keys: {
      list: async () => ({ keys: await guard(admin.keys.list().toArray()) }),
      rotate: () => guard(admin.keys.rotate()),
    },
    webhooks: {
      list: (project: string) => guard(of(project).webhooks.list().toArray()),
      get: (project: string, id: string) => guard(of(project).webhooks.get(id)),
      create: (project: string, body: { url: string; event_types: string[] }) =>
        guard(of(project).webhooks.create(body)),
      delete: (project: string, id: string) => guard(of(project).webhooks.delete(id)),
      deliveries: (project: string, id: string) => guard(of(project).webhooks.deliveries(id).toArray()),
      redeliver: (project: string, id: string, deliveryId: string) =>
        guard(of(project).webhooks.redeliver(id, deliveryId)),
      test: (project: string, id: string) => guard(of(project).webhooks.test(id)),
    },
  };
}

export type ConsoleApi = ReturnType<typeof consoleApi>;
