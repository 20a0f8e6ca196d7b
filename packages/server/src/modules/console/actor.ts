import { AsyncLocalStorage } from 'node:async_hooks';
import type { onRouteHookHandler, RouteHandlerMethod } from 'fastify';
import type { ConsoleRole, User } from '../../db/schema.js';

/** Who acts through the console: recorded with every audit event of their requests. */
export interface ConsoleActor {
  /** The console project's user. */
  user_id: string;
  identifier: string;
  /** The role the request was allowed by (for the project it acts on). */
  role: ConsoleRole;
}

/** A console user signed in with a console access token, and what they may open. */
export interface ConsoleSession {
  user: User;
  /** True when they hold `operator`: every project, the signing keys. */
  operator: boolean;
  /** Their role in each project they have one in, by project id (the strongest when several). */
  roles: ReadonlyMap<string, ConsoleRole>;
}

const actors = new AsyncLocalStorage<ConsoleActor>();

declare module 'fastify' {
  interface FastifyRequest {
    /** Set when the request is made with a console access token (issue 33). */
    consoleActor?: ConsoleActor;
    /** The console session of a member who is not an operator, on routes not of one project. */
    consoleSession?: ConsoleSession;
  }
}

/** The console member acting in the current request, if any. */
export function currentActor(): ConsoleActor | undefined {
  return actors.getStore();
}

/**
 * onRoute hook: the route's handler runs with the request's console actor (set by the console
 * authentication) as the current actor, so the audit events it records carry who acted.
 */
export const runAsActor: onRouteHookHandler = (route) => {
  const handler = route.handler as RouteHandlerMethod;
  route.handler = function (request, reply) {
    const actor = request.consoleActor;
    return actor
      ? actors.run(actor, () => handler.call(this, request, reply))
      : handler.call(this, request, reply);
  };
};
