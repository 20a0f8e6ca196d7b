import type { Role } from './api/types.js';

/**
 * What a console member may do, named as the service names it (packages/server/src/modules/
 * console/permissions.ts): reads are `<area>.read`, support's writes have names of their own, the
 * other writes are `<area>.write`. The console offers only what the member's role allows; the
 * service checks every call again and refuses the rest (403 `forbidden`).
 */
export type Permission =
  | 'users.read'
  | 'sessions.revoke'
  | 'devices.remove'
  | 'passkeys.remove'
  | 'pin.unlock'
  | 'users.delete'
  | 'claims.write'
  | 'clients.write'
  | 'webhooks.write'
  | 'project.write'
  | 'project.secret.rotate'
  | 'projects.create'
  | 'keys.read'
  | 'keys.rotate';

/** What `support` may change besides reading: helping a user back in. */
const SUPPORT_WRITES: ReadonlySet<Permission> = new Set([
  'sessions.revoke',
  'devices.remove',
  'passkeys.remove',
  'pin.unlock',
]);
/** What only an operator holds: what is not of one project. */
const OPERATOR_ONLY: ReadonlySet<Permission> = new Set(['projects.create', 'keys.read', 'keys.rotate']);

/** Whether a role allows a permission (no role: nothing), by the service's rule. */
export function allows(role: Role | undefined, permission: Permission): boolean {
  if (role === undefined) return false;
  if (role === 'operator') return true;
  if (OPERATOR_ONLY.has(permission)) return false;
  if (role === 'admin') return true;
  if (permission.endsWith('.read')) return true;
  return role === 'support' && SUPPORT_WRITES.has(permission);
}
