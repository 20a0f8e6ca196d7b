import type { Role } from './api/types.js';

/**
 * What a console member may do, as the service names it (packages/server/src/modules/console/
 * roles.ts). The console offers only what the member's role allows; the service checks every
 * call again and refuses the rest (403 `forbidden`).
 */
export type Permission =
  | 'read'
  | 'sessions.revoke'
  | 'credentials.remove'
  | 'pin.unlock'
  | 'users.write'
  | 'users.delete'
  | 'claims.write'
  | 'clients.write'
  | 'webhooks.write'
  | 'settings.write'
  | 'projects.manage'
  | 'keys';

const VIEWER: readonly Permission[] = ['read'];
const SUPPORT: readonly Permission[] = [...VIEWER, 'sessions.revoke', 'credentials.remove', 'pin.unlock'];
const ADMIN: readonly Permission[] = [
  ...SUPPORT,
  'users.write',
  'users.delete',
  'claims.write',
  'clients.write',
  'webhooks.write',
  'settings.write',
];
const OPERATOR: readonly Permission[] = [...ADMIN, 'projects.manage', 'keys'];

const BY_ROLE: Readonly<Record<Role, readonly Permission[]>> = {
  viewer: VIEWER,
  support: SUPPORT,
  admin: ADMIN,
  operator: OPERATOR,
};

/** Whether a role allows a permission (no role: nothing). */
export function allows(role: Role | undefined, permission: Permission): boolean {
  return role !== undefined && BY_ROLE[role].includes(permission);
}
