import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { ErrorCodes } from '@tessera/core';
import type { Db } from '../../db/connect.js';
import { TesseraError } from '../../errors.js';
import type { KeyStore } from '../../keys/key-store.js';
import type { DeliveryHealth } from './delivery-health.js';

/** A readiness probe answers within this, whatever the database does. */
export const READY_TIMEOUT_MS = 2_000;

/** Rejects when `work` has not settled within `ms` (the work itself goes on to its own bounds). */
function within(work: Promise<unknown>, ms: number): Promise<unknown> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
  });
  return Promise.race([work, timeout]).finally(() => clearTimeout(timer));
}

export interface HealthRoutesDeps {
  db: Db;
  keys: KeyStore;
  /** Reads the revocation list, as /verify needs it. */
  revocations: { refresh(): Promise<void> };
  /** With TESSERA_READYZ_DELIVERY: a channel whose provider keeps failing makes the instance unready. */
  delivery?: Pick<DeliveryHealth, 'failing'> | undefined;
}

export function healthRoutes({
  db,
  keys,
  revocations,
  delivery,
}: HealthRoutesDeps): FastifyPluginAsyncTypebox {
  return async (app) => {
    /** Liveness: the process answers (whatever the database does). */
    app.get('/healthz', async () => ({ status: 'ok' }));
    /**
     * Readiness: storage answers a round trip and a read of a real table (the revocation list,
     * which /verify needs) within READY_TIMEOUT_MS, and a signing key is loaded; with
     * TESSERA_READYZ_DELIVERY, no delivery channel is failing (its own attempts, no probe).
     */
    app.get('/readyz', async () => {
      try {
        await within(Promise.all([db.ping(), revocations.refresh()]), READY_TIMEOUT_MS);
      } catch (error) {
        throw new TesseraError(503, ErrorCodes.serviceUnavailable, 'storage is not reachable', {
          cause: error,
        });
      }
      try {
        keys.signingKey();
      } catch (error) {
        throw new TesseraError(503, ErrorCodes.serviceUnavailable, 'no signing key is loaded', {
          cause: error,
        });
      }
      const failing = delivery?.failing() ?? [];
      if (failing.length > 0) {
        throw new TesseraError(
          503,
          ErrorCodes.serviceUnavailable,
          `OTP delivery is failing (${failing.join(', ')}): the provider refused the last attempts`,
        );
      }
      return { status: 'ready' };
    });
  };
}
