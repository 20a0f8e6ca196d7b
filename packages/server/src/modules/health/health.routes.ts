import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { ErrorCodes } from '@tessera/core';
import type { AppContext } from '../../app.js';
import { TesseraError } from '../../errors.js';

export function healthRoutes(ctx: AppContext): FastifyPluginAsyncTypebox {
  return async (app) => {
    /** Liveness: the process answers. */
    app.get('/healthz', async () => ({ status: 'ok' }));
    /** Readiness: storage answers and a signing key is loaded. */
    app.get('/readyz', async () => {
      try {
        await ctx.db.ping();
      } catch (error) {
        throw new TesseraError(503, ErrorCodes.serviceUnavailable, 'storage is not reachable', {
          cause: error,
        });
      }
      try {
        ctx.keys.signingKey();
      } catch (error) {
        throw new TesseraError(503, ErrorCodes.serviceUnavailable, 'no signing key is loaded', {
          cause: error,
        });
      }
      return { status: 'ready' };
    });
  };
}
