import type { Server } from 'node:http';
import type { FastifyHttpOptions } from 'fastify';
import type { Config } from './config/index.js';

/**
 * Fastify's server options for slow and idle clients. Node checks the headers and request
 * timeouts every `connectionsCheckingInterval` (30 s by default, which would let a 30 s bound
 * run to a minute), so the check runs at half the headers timeout, between 0.25 and 5 s.
 */
export function httpTimeouts(http: Config['http']): FastifyHttpOptions<Server> {
  return {
    requestTimeout: http.requestTimeoutMs,
    keepAliveTimeout: http.keepAliveTimeoutMs,
    connectionTimeout: http.socketTimeoutMs,
    http: {
      headersTimeout: http.headersTimeoutMs,
      connectionsCheckingInterval: Math.max(250, Math.min(5000, http.headersTimeoutMs / 2)),
    },
  };
}
