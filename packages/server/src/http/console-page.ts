import type { FastifyPluginAsync } from 'fastify';
import type { AppContext } from '../context.js';
import { serviceUnavailable } from '../errors.js';
import { consoleRoutes } from '../modules/console/console.routes.js';
import { consoleBundle, consolePageRoutes } from '../modules/console/console-page.routes.js';
import { problemErrorHandler } from '../plugins/error-handler.js';
import { documentErrors, documentSecurity } from './openapi.js';

export { CONSOLE_PROJECT } from '../modules/console/console.service.js';

/**
 * The console (`/console`, issue 33), served while TESSERA_CONSOLE is on: its page in its own
 * scope, no CORS (only the console's own origin loads it), problem documents; and
 * `GET /v1/console/me` for the signed-in member.
 */
export function consolePageFamily(ctx: AppContext): FastifyPluginAsync {
  return async (scope) => {
    scope.setErrorHandler(problemErrorHandler);
    await scope.register(
      consolePageRoutes({
        bundle: consoleBundle(),
        issuer: ctx.config.issuer,
        consoleApiKeyId: async () => {
          const project =
            (await ctx.console.project()) ??
            (await ctx.console.ensureProject().catch(() => {
              throw serviceUnavailable('the console project is not set up yet; retry shortly', 5);
            }));
          return project.api_key_id;
        },
      }),
    );
    await scope.register(async (api) => {
      api.addHook('onRoute', documentErrors('problem'));
      api.addHook('onRoute', documentSecurity('consoleToken'));
      await api.register(consoleRoutes({ console: ctx.console, projects: ctx.projects }));
    });
  };
}
