import assert from 'node:assert/strict';
import { test } from 'node:test';
import { permissionOf, roleAllows } from '../../src/modules/console/permissions.js';

test('permissionOf names each console-relevant route as docs/CONSOLE.md lists it', () => {
  const cases: Array<[string, string, string]> = [
    ['GET', '/v1/users/:user_id', 'users.read'],
    ['GET', '/v1/users/search', 'users.read'],
    ['DELETE', '/v1/users/:user_id', 'users.delete'],
    ['PATCH', '/v1/users/:user_id', 'users.write'],
    ['PUT', '/v1/users/:user_id/claims', 'claims.write'],
    ['POST', '/v1/users/:user_id/sessions/revoke', 'sessions.revoke'],
    ['DELETE', '/v1/users/:user_id/sessions/:session_id', 'sessions.revoke'],
    ['DELETE', '/v1/users/:user_id/devices/:device_id', 'devices.remove'],
    ['PATCH', '/v1/users/:user_id/devices/:device_id', 'devices.write'],
    ['DELETE', '/v1/users/:user_id/passkeys/:passkey_id', 'passkeys.remove'],
    ['POST', '/v1/users/:user_id/pin/unlock', 'pin.unlock'],
    ['GET', '/v1/users/:user_id/pin', 'pin.read'],
    ['DELETE', '/v1/users/:user_id/grants/:client_id', 'grants.write'],
    ['POST', '/v1/clients', 'clients.write'],
    ['GET', '/v1/clients/:client_id', 'clients.read'],
    ['POST', '/v1/webhooks/:webhook_id/test', 'webhooks.write'],
    ['GET', '/v1/audit', 'audit.read'],
    ['GET', '/v1/stats', 'stats.read'],
    ['PUT', '/v1/project/branding', 'project.write'],
    ['GET', '/v1/operator/projects', 'project.read'],
    ['POST', '/v1/operator/projects', 'projects.create'],
    ['PATCH', '/v1/operator/projects/:api_key_id', 'project.write'],
    ['DELETE', '/v1/operator/projects/:api_key_id', 'projects.delete'],
    ['POST', '/v1/operator/projects/:api_key_id/rotate-secret', 'project.secret.rotate'],
    ['POST', '/v1/operator/projects/:api_key_id/clients', 'clients.write'],
    ['GET', '/v1/operator/keys', 'keys.read'],
    ['POST', '/v1/operator/keys/rotate', 'keys.rotate'],
  ];
  for (const [method, url, expected] of cases)
    assert.equal(permissionOf(method, url), expected, `${method} ${url}`);
});

test('the role matrix: viewer reads, support helps users back in, admin has the project, operator all', () => {
  const matrix: Record<string, [boolean, boolean, boolean, boolean]> = {
    'users.read': [true, true, true, true],
    'sessions.revoke': [false, true, true, true],
    'devices.remove': [false, true, true, true],
    'passkeys.remove': [false, true, true, true],
    'pin.unlock': [false, true, true, true],
    'users.delete': [false, false, true, true],
    'clients.write': [false, false, true, true],
    'project.secret.rotate': [false, false, true, true],
    'projects.create': [false, false, false, true],
    'keys.read': [false, false, false, true],
    'keys.rotate': [false, false, false, true],
  };
  for (const [permission, allowed] of Object.entries(matrix))
    (['viewer', 'support', 'admin', 'operator'] as const).forEach((role, i) => {
      assert.equal(roleAllows(role, permission), allowed[i], `${role} ${permission}`);
    });
});
