import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { AppContext } from '../context.js';
import { type CorsPolicy, projectOrigins } from '../plugins/cors.js';
import { apiKeyIdOf } from '../plugins/request-context.js';

/**
 * Answers unknown paths under each prefix with `handler`, from a child of `scope`, so that the
 * scope's hooks (CORS) and error handler apply to those 404s too (or `errorHandler`, e.g. a body
 * that fails to parse on its way to the 404). Fastify registers the handler for `prefix` and
 * `prefix/*` (`prefix*` when the prefix ends with a slash).
 */
export async function notFoundUnder(
  scope: FastifyInstance,
  prefixes: readonly string[],
  handler: (request: FastifyRequest, reply: FastifyReply) => unknown,
  errorHandler?: (error: FastifyError, request: FastifyRequest, reply: FastifyReply) => unknown,
): Promise<void> {
  for (const prefix of prefixes) {
    await scope.register(
      async (child) => {
        if (errorHandler) child.setErrorHandler(errorHandler);
        child.setNotFoundHandler(handler);
      },
      { prefix },
    );
  }
}

/**
 * The CORS policy of a family apps call from browsers: origins some project lists pass on to the
 * routes' own checks; any other is refused at once, readably (`problem`: `403 origin_not_allowed`;
 * `oauth`: `403 invalid_client`), and warned about with the project `API_KEY_ID` names, if any.
 */
export function browserOrigins(ctx: AppContext, format: 'problem' | 'oauth'): CorsPolicy {
  const projectOf = async (request: FastifyRequest) => {
    const apiKeyId = apiKeyIdOf(request);
    return apiKeyId ? await ctx.projects.byApiKeyId(apiKeyId).catch(() => undefined) : undefined;
  };
  return projectOrigins(
    async (origin) =>
      origin === ctx.originRefusals.hostedOrigin || (await ctx.projects.isKnownOrigin(origin)),
    async (request, origin) => ctx.originRefusals[format](request.log, origin, await projectOf(request)),
  );
}
