import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';

/**
 * Answers unknown paths under each prefix with `handler`, from a child of `scope`, so that the
 * scope's hooks (CORS) and error handler apply to those 404s too. Fastify registers the handler
 * for `prefix` and `prefix/*` (`prefix*` when the prefix ends with a slash).
 */
export async function notFoundUnder(
  scope: FastifyInstance,
  prefixes: readonly string[],
  handler: (request: FastifyRequest, reply: FastifyReply) => unknown,
): Promise<void> {
  for (const prefix of prefixes) {
    await scope.register(
      async (child) => {
        child.setNotFoundHandler(handler);
      },
      { prefix },
    );
  }
}
