import type { FastifyInstance, FastifyRequest } from 'fastify';

export interface InFlight {
  /** Requests whose handling has not ended. */
  readonly count: number;
  /** Resolves `true` once no request is being handled, or `false` if `timeoutMs` passes first. */
  drained(timeoutMs: number): Promise<boolean>;
}

export interface InFlightOptions {
  /** How long `app.close()` waits for running requests before going on anyway. Default 5000 ms. */
  drainTimeoutMs?: number;
}

/** A reply was sent (or the handler returned nothing): the request's own code is done. */
const SENT = 1;
/** The response is over: written, or its connection gone. */
const CLOSED = 2;
const ENDED = SENT | CLOSED;

/**
 * Tracks the requests being handled and makes `app.close()` wait for them (a `preClose` hook),
 * so that storage closed after `app.close()` is never closed under a running handler.
 *
 * Fastify's own close waits for connections, not handlers: when a client goes away, its socket
 * closes at once while the handler goes on, and `onResponse` never fires for it. So a request
 * ends when its response is over (written, or its connection gone) and its code is done: a reply
 * was sent (`onSend`, whether by the handler, a hook or the error handler) or the handler
 * returned nothing. Call it before any route is added (handlers are wrapped by `onRoute`).
 */
export function trackInFlight(app: FastifyInstance, options: InFlightOptions = {}): InFlight {
  const drainTimeoutMs = options.drainTimeoutMs ?? 5000;
  const states = new Map<FastifyRequest, number>();
  let waiters: Array<() => void> = [];

  const mark = (request: FastifyRequest, bits: number) => {
    const state = states.get(request);
    if (state === undefined) return;
    if ((state | bits) !== ENDED) {
      states.set(request, state | bits);
      return;
    }
    states.delete(request);
    if (states.size === 0) {
      const woken = waiters;
      waiters = [];
      for (const wake of woken) wake();
    }
  };

  app.addHook('onRequest', (request, reply, done) => {
    states.set(request, 0);
    reply.raw.once('close', () => mark(request, reply.raw.writableEnded ? ENDED : CLOSED));
    done();
  });
  app.addHook('onSend', (request, _reply, payload, done) => {
    mark(request, SENT);
    done(null, payload);
  });
  // A handler that returns nothing after its client went away is the one case Fastify sends
  // nothing for (so no onSend); an answer or an error always reaches onSend.
  app.addHook('onRoute', (route) => {
    const handler = route.handler;
    route.handler = function (this: FastifyInstance, request, reply) {
      const result = handler.call(this, request, reply);
      if (result instanceof Promise) {
        result.then(
          (payload) => {
            if (payload === undefined) mark(request, SENT);
          },
          () => {},
        );
      }
      return result;
    };
  });

  const inFlight: InFlight = {
    get count() {
      return states.size;
    },
    drained(timeoutMs) {
      if (states.size === 0) return Promise.resolve(true);
      return new Promise((resolve) => {
        const wake = () => {
          clearTimeout(timer);
          resolve(true);
        };
        const timer = setTimeout(() => {
          waiters = waiters.filter((w) => w !== wake);
          resolve(false);
        }, timeoutMs);
        waiters.push(wake);
      });
    },
  };

  app.addHook('preClose', async () => {
    if (!(await inFlight.drained(drainTimeoutMs)))
      app.log.warn(
        { requests: states.size },
        `requests still running after ${drainTimeoutMs} ms; closing anyway`,
      );
  });
  return inFlight;
}
