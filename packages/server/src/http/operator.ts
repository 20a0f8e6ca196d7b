import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { ErrorCodes } from '@tessera/core';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { type AppContext, recordKeyRotation } from '../context.js';
import { TesseraError } from '../errors.js';
import { clientsRoutes } from '../modules/clients/clients.routes.js';
import { runAsActor } from '../modules/console/actor.js';
import { keysRoutes } from '../modules/operator/keys.routes.js';
import { operatorRoutes } from '../modules/operator/operator.routes.js';
import { requireOperatorOrConsole, requireOperatorToken } from '../modules/operator/operator-token.js';
import { problemErrorHandler, problemNotFound } from '../plugins/error-handler.js';
import { documentErrors, documentSecurity, documentSecurityOrConsole } from './openapi.js';
import { notFoundUnder } from './scope.js';

/** Every path of the family while TESSERA_OPERATOR_TOKEN is unset. */
function operatorApiOff(_request: FastifyRequest, _reply: FastifyReply): never {
  throw new TesseraError(
    404,
    ErrorCodes.notFound,
    'the operator API is off; set TESSERA_OPERATOR_TOKEN to turn it on',
  );
}

/**
 * The operator family (`/v1/operator/*`): project management for the service's operators, with
 * `Authorization: Bearer <TESSERA_OPERATOR_TOKEN>` checked on every request before anything else
 * (unknown paths included). Without the token configured, every path answers 404. Problem
 * documents; no CORS (operators call it from servers and scripts, not browsers).
 */
export function operatorFamily(ctx: AppContext): FastifyPluginAsyncTypebox {
  return async (scope) => {
    scope.setErrorHandler(problemErrorHandler);
    scope.addHook('onRoute', documentErrors('problem'));
    scope.addHook(
      'onRoute',
      ctx.config.console
        ? documentSecurityOrConsole('operatorToken', false)
        : documentSecurity('operatorToken'),
    );
    const token = ctx.config.operatorToken;
    if (!token && !ctx.config.console) {
      await notFoundUnder(scope, ['/v1/operator'], operatorApiOff);
      return;
    }
    // With the console on, a console member's access token is accepted too (issue 33).
    scope.addHook(
      'onRequest',
      ctx.config.console ? requireOperatorOrConsole(token, ctx.console) : requireOperatorToken(token!),
    );
    scope.addHook('onRoute', runAsActor);
    await notFoundUnder(scope, ['/v1/operator'], problemNotFound);
    await scope.register(operatorRoutes({ projects: ctx.projects, audit: ctx.audit }));
    await scope.register(
      keysRoutes({
        keys: ctx.keys,
        config: ctx.config,
        recordRotation: async (kid, by) => recordKeyRotation(ctx.audit, await ctx.projects.list(), kid, by),
      }),
    );
    await scope.register(
      clientsRoutes({
        clients: ctx.clients,
        base: '/v1/operator/projects/:api_key_id/clients',
        project: (request) => ctx.projects.get((request.params as { api_key_id: string }).api_key_id),
      }),
    );
  };
}
