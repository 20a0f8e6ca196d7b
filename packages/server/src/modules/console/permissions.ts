import type { ConsoleRole } from '../../db/schema.js';

/** The roles, weakest first (docs/CONSOLE.md). */
export const CONSOLE_ROLES: readonly ConsoleRole[] = ['viewer', 'support', 'admin', 'operator'];

export function isConsoleRole(value: string): value is ConsoleRole {
  return (CONSOLE_ROLES as readonly string[]).includes(value);
}

/** What `support` may change besides reading: helping a user back in, never erasing or configuring. */
const SUPPORT_WRITES = new Set(['sessions.revoke', 'devices.remove', 'passkeys.remove', 'pin.unlock']);

/**
 * Permissions only an operator holds: what is not of one project (projects themselves, the
 * service's signing keys).
 */
const OPERATOR_ONLY = new Set(['projects.create', 'projects.delete', 'keys.read', 'keys.rotate']);

/** Whether `role` grants `permission` (a name such as `users.read` or `clients.write`). */
export function roleAllows(role: ConsoleRole, permission: string): boolean {
  if (role === 'operator') return true;
  if (OPERATOR_ONLY.has(permission)) return false;
  if (role === 'admin') return true;
  if (permission.endsWith('.read')) return true;
  return role === 'support' && SUPPORT_WRITES.has(permission);
}

/** The stronger of two roles. */
export function strongerRole(a: ConsoleRole, b: ConsoleRole): ConsoleRole {
  return CONSOLE_ROLES.indexOf(a) >= CONSOLE_ROLES.indexOf(b) ? a : b;
}

/**
 * The permission a route of the integrator or operator API needs, from its method and path
 * pattern: reads are `<area>.read` (no route read answers a secret: secrets are shown once, by the
 * write that makes them); the writes `support` may do have their own names; any other write is
 * `<area>.write` (`users.delete` for erasing a user).
 */
export function permissionOf(method: string, url: string): string {
  const path = url.replace(/^\/v1\/(operator\/)?/, '');
  const parts = path.split('/').filter((part) => part !== '' && !part.startsWith(':'));
  if (url === '/v1/operator/projects' && method === 'POST') return 'projects.create';
  if (/^\/v1\/operator\/keys/.test(url)) return method === 'GET' ? 'keys.read' : 'keys.rotate';
  if (/^\/v1\/operator\/projects\/:api_key_id$/.test(url) && method === 'DELETE') return 'projects.delete';
  if (/\/rotate-secret$/.test(url)) return 'project.secret.rotate';
  // users/<sub-resource>: the sub-resource names the area (sessions, devices, claims, …).
  let area = parts[0] === 'projects' ? (parts[1] ?? 'project') : (parts[0] ?? 'project');
  if (parts[0] === 'users' && parts[1] && parts[1] !== 'search') area = parts[1];
  if (area === 'projects') area = 'project';
  if (method === 'GET' || method === 'HEAD') return `${area}.read`;
  if (area === 'sessions') return 'sessions.revoke';
  if (area === 'devices' && method === 'DELETE') return 'devices.remove';
  if (area === 'passkeys' && method === 'DELETE') return 'passkeys.remove';
  if (area === 'pin' && /\/unlock$/.test(url)) return 'pin.unlock';
  if (area === 'users' && method === 'DELETE') return 'users.delete';
  return `${area}.write`;
}
