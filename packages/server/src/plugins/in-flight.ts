import { setTimeout as sleep } from 'node:timers/promises';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';

/** How often a draining close checks whether the last requests have ended. */
const DRAIN_POLL_MS = 10;
/** How often orphans (see trackInFlight) are checked for their end while there are any. */
const ORPHAN_PRUNE_MS = 1000;

export interface InFlight {
  /** Requests whose handling has not ended. */
  readonly count: number;
  /** Resolves `true` once no request is being handled, or `false` if `timeoutMs` passes first. */
  drained(timeoutMs: number): Promise<boolean>;
  /** Whether `app.close()` has begun: requests arriving now are refused (`refuseWhenClosing`). */
  readonly closing: boolean;
  /**
   * Counts a request answered outside Fastify's lifecycle (the /verify fast path) until `leave`:
   * `app.close()` waits for it as for a handler.
   */
  enter(): void;
  leave(): void;
}

export interface InFlightOptions {
  /** How long `app.close()` waits for running requests before going on anyway. Default 5000 ms. */
  drainTimeoutMs?: number;
  /**
   * Once `app.close()` has begun, a request that still arrives (on an open connection) fails
   * with this error, which the request's error handler renders. Default: it is served.
   */
  refuseWhenClosing?: () => Error;
}

/**
 * Tracks the requests being handled and makes `app.close()` wait for them (a `preClose` hook),
 * so that storage closed after `app.close()` is never closed under a running handler.
 *
 * Fastify's own close waits for connections, not handlers: when a client goes away, its socket
 * closes at once while the handler goes on, and `onResponse` never fires for it. So a request
 * ends when its response is over and its code is done:
 * - normally, when its response has been written (`onResponse`);
 * - when its connection closed first (an orphan), once a reply was sent (by the handler, a hook
 *   or the error handler) or the handler returned nothing.
 *
 * The common case costs a Set insert and delete: connections, not requests, get a `close`
 * listener, and orphans (rare) are checked for their end when counted and once a second. Call it before
 * any route is added (handlers are wrapped by `onRoute`).
 */
export function trackInFlight(app: FastifyInstance, options: InFlightOptions = {}): InFlight {
  const drainTimeoutMs = options.drainTimeoutMs ?? 5000;
  /**
   * Unfinished responses by connection: a closing connection visits its own only (a scan of every
   * open response per close would let many connections closing at once cost quadratic time).
   */
  const byConnection = new WeakMap<object, Set<FastifyReply>>();
  /** The same sets, while their connection is open: walked once, when closing begins. */
  const openConnections = new Set<Set<FastifyReply>>();
  let open = 0;
  /** Requests counted by `enter` and not yet by `leave`. */
  let entered = 0;
  /** Requests whose connection closed before their response was over, while their code runs on. */
  const orphans = new Set<FastifyReply>();
  /** Handlers that returned nothing after their client left: Fastify sends nothing for them. */
  const returnedNothing = new WeakSet<FastifyRequest>();

  const codeDone = (reply: FastifyReply) => reply.sent || returnedNothing.has(reply.request);
  const pruneOrphans = () => {
    for (const reply of orphans) if (codeDone(reply)) orphans.delete(reply);
  };
  // Orphans end without an event (a reply sent to a closed connection): they are checked when
  // counted, and every second while there are any, never on the request path.
  let pruning: NodeJS.Timeout | undefined;
  const watchOrphans = () => {
    if (pruning || orphans.size === 0) return;
    pruning = setInterval(() => {
      pruneOrphans();
      if (orphans.size === 0) {
        clearInterval(pruning);
        pruning = undefined;
      }
    }, ORPHAN_PRUNE_MS);
    pruning.unref();
  };

  let closing = false;
  app.addHook('onRequest', (request, reply, done) => {
    if (closing && options.refuseWhenClosing) return done(options.refuseWhenClosing());
    const connection = request.raw.socket;
    if (connection.destroyed) {
      // Gone before its request got here (an async hook ran first): an orphan from the start.
      orphans.add(reply);
      watchOrphans();
      return done();
    }
    let replies = byConnection.get(connection);
    if (replies === undefined) {
      const mine = new Set<FastifyReply>();
      replies = mine;
      byConnection.set(connection, mine);
      openConnections.add(mine);
      // A connection that closes ends its unfinished responses: they become orphans.
      connection.once('close', () => {
        openConnections.delete(mine);
        open -= mine.size;
        for (const unfinished of mine) if (!codeDone(unfinished)) orphans.add(unfinished);
        mine.clear();
        watchOrphans();
      });
    }
    replies.add(reply);
    open++;
    done();
  });
  app.addHook('onResponse', (request, reply, done) => {
    if (byConnection.get(request.raw.socket)?.delete(reply)) open--;
    done();
  });
  // A handler that returns nothing after its client went away is the one case Fastify sends
  // nothing for; an answer or an error always sends a reply.
  app.addHook('onRoute', (route) => {
    const handler = route.handler;
    route.handler = function (this: FastifyInstance, request, reply) {
      const result = handler.call(this, request, reply);
      if (result instanceof Promise) {
        result.then(
          (payload) => {
            if (payload === undefined) returnedNothing.add(request);
          },
          () => {},
        );
      }
      return result;
    };
  });

  const count = () => {
    pruneOrphans();
    return open + entered + orphans.size;
  };

  const inFlight: InFlight = {
    get count() {
      return count();
    },
    get closing() {
      return closing;
    },
    enter() {
      entered++;
    },
    leave() {
      entered--;
    },
    async drained(timeoutMs) {
      // Polled: orphans end without an event (a reply sent to a closed connection).
      const deadline = performance.now() + timeoutMs;
      while (count() > 0) {
        if (performance.now() >= deadline) return false;
        await sleep(Math.min(DRAIN_POLL_MS, Math.max(1, deadline - performance.now())));
      }
      return true;
    },
  };

  app.addHook('onClose', (_instance, done) => {
    clearInterval(pruning);
    done();
  });
  app.addHook('preClose', async () => {
    closing = true;
    // The responses still to be written close their connection: their clients send the next
    // request on a new one (to another instance) rather than on one this server is about to
    // close under it (a reset, where a 503 or another instance would have answered).
    for (const replies of openConnections)
      for (const reply of replies) if (!reply.raw.headersSent) reply.header('connection', 'close');
    // Idle keep-alive connections close first, before their clients send anything more on them:
    // closed only at the end of the drain, a request sent just then met a closed socket (a 502
    // behind a proxy, not retried for a POST) instead of this 503.
    app.server.closeIdleConnections?.();
    if (!(await inFlight.drained(drainTimeoutMs)))
      app.log.warn(
        { requests: count() },
        `requests still running after ${drainTimeoutMs} ms; closing anyway`,
      );
  });
  return inFlight;
}
