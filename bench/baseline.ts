import type { FastifyInstance } from 'fastify';
import { answerCpuQueries, type ReadyMessage } from './protocol.js';

/**
 * In a baseline child (bare-entry.ts, verifier-entry.ts): listen on a free loopback port, stop on
 * SIGTERM/SIGINT or when the parent goes away, answer CPU queries, then say ready.
 */
export async function serveBaseline(app: FastifyInstance): Promise<void> {
  await app.listen({ host: '127.0.0.1', port: 0 });
  const address = app.server.address();
  if (!address || typeof address === 'string') throw new Error('the baseline server has no TCP address');

  const stop = () => {
    const force = setTimeout(() => process.exit(1), 3000);
    force.unref();
    app.close().finally(() => process.exit(0));
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
  process.once('disconnect', stop);

  answerCpuQueries();
  const ready: ReadyMessage = { type: 'ready', url: `http://127.0.0.1:${address.port}` };
  process.send?.(ready);
}
