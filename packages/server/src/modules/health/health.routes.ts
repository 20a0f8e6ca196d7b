import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { ErrorCodes } from '@tessera/core';
import type { Db } from '../../db/connect.js';
import type { DatabaseOutage } from '../../db/outage.js';
import { isReadOnly } from '../../db/unavailable.js';
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
  /** How long a probe waits for storage (READY_TIMEOUT_MS; tests shorten it). */
  timeoutMs?: number;
  /**
   * The instance's outage log: a failed storage check is counted and logged there once per
   * outage (not an error line per probe), and storage that cannot take writes (SQLite full or
   * failing) makes the instance unready although reads work.
   */
  outage?: Pick<DatabaseOutage, 'unready' | 'reachable' | 'storageFull'> | undefined;
}

/**
 * The storage half of readiness, at most one at a time: a probe arriving while a check is still
 * running (a stalled database holds it until the pool's own timeouts) waits on that check instead
 * of queueing more queries behind it, so load balancers probing from many places every few
 * seconds never pile up connections or waiters on a stalled database.
 */
function storageCheck(db: Pick<Db, 'ping'>, revocations: { refresh(): Promise<void> }): () => Promise<void> {
  let running: Promise<void> | undefined;
  return () => {
    running ??= Promise.all([db.ping(), revocations.refresh()]).then(
      () => {
        running = undefined;
      },
      (error: unknown) => {
        running = undefined;
        throw error;
      },
    );
    return running;
  };
}

export function healthRoutes({
  db,
  keys,
  revocations,
  delivery,
  timeoutMs = READY_TIMEOUT_MS,
  outage,
}: HealthRoutesDeps): FastifyPluginAsyncTypebox {
  const storage = storageCheck(db, revocations);
  let reported = '';
  return async (app) => {
    /** Liveness: the process answers (whatever the database does). */
    app.get('/healthz', async () => ({ status: 'ok' }));
    /**
     * Readiness: storage answers a round trip and a read of a real table (the revocation list,
     * which /verify needs) within READY_TIMEOUT_MS, and a signing key is loaded; with
     * TESSERA_READYZ_DELIVERY, no delivery channel is failing (its own attempts, no probe). At
     * most one storage check runs at a time (storageCheck). The answer names no delivery channel
     * or provider: which one fails is for operators (the log line below, tessera_deliveries_total).
     */
    app.get('/readyz', async () => {
      try {
        await within(storage(), timeoutMs);
      } catch (error) {
        outage?.unready(error);
        throw new TesseraError(
          503,
          ErrorCodes.serviceUnavailable,
          isReadOnly(error) ? 'storage is read-only' : 'storage is not reachable',
          // Logged once per outage by `outage`, not once per probe.
          { cause: error, deliberate: outage !== undefined },
        );
      }
      outage?.reachable();
      if (outage?.storageFull()) {
        outage.unready();
        throw new TesseraError(
          503,
          ErrorCodes.serviceUnavailable,
          'storage cannot take writes (full or failing)',
          { deliberate: true },
        );
      }
      try {
        keys.signingKey();
      } catch (error) {
        throw new TesseraError(503, ErrorCodes.serviceUnavailable, 'no signing key is loaded', {
          cause: error,
        });
      }
      const failing = (delivery?.failing() ?? []).join(', ');
      if (failing !== reported) {
        // Once per change, not per probe.
        if (failing) app.log.warn({ channels: failing }, 'not ready: OTP delivery is failing');
        reported = failing;
      }
      if (failing) {
        throw new TesseraError(
          503,
          ErrorCodes.serviceUnavailable,
          'OTP delivery is failing; the instance logs and metrics say where',
        );
      }
      return { status: 'ready' };
    });
  };
}
