import { timingSafeEqual } from 'node:crypto';
import { ErrorCodes } from '@tessera/core';
import type { onRequestHookHandler } from 'fastify';
import { sha256 } from '../../crypto/hash.js';
import { TesseraError } from '../../errors.js';

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
