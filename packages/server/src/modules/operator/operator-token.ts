import { timingSafeEqual } from 'node:crypto';
import { ErrorCodes } from '@tessera/core';
import type { onRequestAsyncHookHandler, onRequestHookHandler } from 'fastify';
import { sha256 } from '../../crypto/hash.js';
import { TesseraError } from '../../errors.js';
import { actorOf, type ConsoleService } from '../console/console.service.js';
import { permissionOf, strongerRole } from '../console/permissions.js';

/**
 * onRequest hook of the operator API: `Authorization: Bearer <TESSERA_OPERATOR_TOKEN>`. The
 * presented and the configured token are compared as SHA-256 digests with `timingSafeEqual`:
 * equal lengths always, so the time taken says nothing about either token, its length included.
 * Every failure reads the same.
 */
export function requireOperatorToken(token: string): onRequestHookHandler {
  const expected = Buffer.from(sha256(token));
  return (request, _reply, done) => {
    const match = /^Bearer\s+(\S+)\s*$/i.exec(request.headers.authorization ?? '');
    const presented = Buffer.from(sha256(match?.[1] ?? ''));
    if (match && timingSafeEqual(presented, expected)) {
      done();
      return;
    }
    done(
      new TesseraError(
        401,
        ErrorCodes.unauthorized,
        'the operator token is required (Authorization: Bearer …)',
        {
          headers: { 'www-authenticate': 'Bearer realm="operator"' },
        },
      ),
    );
  };
}

/**
 * onRequest hook of the operator API with the console on (issue 33): the operator token as above
 * (when one is set), or a console access token. An `operator` member may do everything; another
 * member may list the projects they have a role in and act on those as their role allows (a
 * project they have none in is 404, as if unknown); the rest (creating or deleting projects, the
 * signing keys) is 403 naming the permission.
 */
export function requireOperatorOrConsole(
  token: string | undefined,
  consoleService: ConsoleService,
): onRequestAsyncHookHandler {
  const expected = token === undefined ? undefined : Buffer.from(sha256(token));
  return async (request) => {
    const match = /^Bearer\s+(\S+)\s*$/i.exec(request.headers.authorization ?? '');
    if (expected && match && timingSafeEqual(Buffer.from(sha256(match[1]!)), expected)) return;
    const session = await consoleService.authenticate(request.headers.authorization);
    const url = request.routeOptions.url;
    // An unknown path: answered 404 by the family once the caller is known to be a member.
    if (!url) return;
    const permission = permissionOf(request.method, url);
    if (session.operator) {
      request.consoleActor = actorOf(session, 'operator');
      return;
    }
    const apiKeyId = (request.params as { api_key_id?: unknown } | undefined)?.api_key_id;
    if (typeof apiKeyId === 'string') {
      const { actor } = await consoleService.access(session, apiKeyId, permission);
      request.consoleActor = actor;
      return;
    }
    // No project named: listing projects (filtered to theirs), or what only operators may do.
    const strongest = [...session.roles.values()].reduce(strongerRole, 'viewer');
    consoleService.check(strongest, permission);
    request.consoleSession = session;
    request.consoleActor = actorOf(session, strongest);
  };
}
