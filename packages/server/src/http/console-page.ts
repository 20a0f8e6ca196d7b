import type { FastifyPluginAsync } from 'fastify';
import type { AppContext } from '../context.js';
import { serviceUnavailable } from '../errors.js';
import { consoleBundle, consolePageRoutes } from '../modules/console/console-page.routes.js';
import { problemErrorHandler } from '../plugins/error-handler.js';

/** The built-in console project's name (docs/CONSOLE.md). */
export const CONSOLE_PROJECT = 'console';

/**
 * The console's page (`/console`, issue 33), served while TESSERA_CONSOLE is on: its own scope,
 * no CORS (only the console's own origin loads it), problem documents for its one JSON route.
 */
export function consolePageFamily(ctx: AppContext): FastifyPluginAsync {
  return async (scope) => {
    scope.setErrorHandler(problemErrorHandler);
    await scope.register(
      consolePageRoutes({
        bundle: consoleBundle(),
        issuer: ctx.config.issuer,
        consoleApiKeyId: async () => {
          const project = await ctx.projects.findByName(CONSOLE_PROJECT);
          if (!project) throw serviceUnavailable('the console project is not set up yet; retry shortly', 5);
          return project.api_key_id;
        },
      }),
    );
  };
}
