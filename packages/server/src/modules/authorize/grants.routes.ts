import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { notFound } from '../../errors.js';
import { NoContent, security } from '../../http/openapi.js';
import type { AppHooks } from '../../plugins/request-context.js';
import type { AuthorizeRepository } from './authorize.repository.js';

const Grant = Type.Object({
  client_id: Type.String(),
  client_name: Type.String(),
  scope: Type.String(),
  created_at: Type.String({ format: 'date-time' }),
  updated_at: Type.String({ format: 'date-time' }),
});
const Params = Type.Object({ client_id: Type.String({ minLength: 1, maxLength: 2000 }) });

const hostOf = (clientId: string) => {
  try {
    return new URL(clientId).host || clientId;
  } catch {
    return clientId;
  }
};

/**
 * After a grant's consent row is deleted: ends the user's sessions of the client (its tokens stop
 * working) and records who withdrew it.
 */
export type GrantWithdrawn = (
  projectId: string,
  clientId: string,
  userId: string,
  by: 'user' | 'integrator',
) => Promise<void>;

const toView = (r: Awaited<ReturnType<AuthorizeRepository['listConsents']>>[number]) => ({
  client_id: r.client_id,
  // A metadata document's client is shown by the host of its client id URL, which vouches for it.
  client_name: r.name ?? hostOf(r.client_id),
  scope: r.scope,
  created_at: new Date(r.created_at).toISOString(),
  updated_at: new Date(r.updated_at).toISOString(),
});

/** The signed-in user's grants to third-party OAuth clients: listed and revocable (issue 31). */
export function grantsRoutes({
  repository,
  grantWithdrawn,
  hooks,
}: {
  repository: AuthorizeRepository;
  grantWithdrawn: GrantWithdrawn;
  hooks: AppHooks;
}): FastifyPluginAsyncTypebox {
  return async (app) => {
    const guarded = { onRequest: hooks.ipLimit('me'), preHandler: hooks.bearer };
    app.get(
      '/v1/me/grants',
      {
        schema: {
          operationId: 'listMyGrants',
          summary: 'The OAuth clients the user has allowed, with the scopes',
          tags: ['account'],
          security: security('accessToken'),
          response: { 200: Type.Object({ grants: Type.Array(Grant) }) },
        },
        ...guarded,
      },
      async (request) => {
        const rows = await repository.listConsents(request.auth.project.id, request.auth.user.id);
        return { grants: rows.map(toView) };
      },
    );
    app.delete(
      '/v1/me/grants/:client_id',
      {
        schema: {
          operationId: 'revokeMyGrant',
          summary: 'Withdraw a grant: the client asks for consent again, and its sessions of the user end',
          tags: ['account'],
          security: security('accessToken'),
          params: Params,
          response: { 204: NoContent },
        },
        ...guarded,
      },
      async (request, reply) => {
        const { project, user } = request.auth;
        if (!(await repository.deleteConsent(project.id, user.id, request.params.client_id)))
          throw notFound('you have not allowed this client');
        await grantWithdrawn(project.id, request.params.client_id, user.id, 'user');
        return reply.code(204).send();
      },
    );
  };
}

const UserParams = Type.Object({ user_id: Type.String({ minLength: 1, maxLength: 100 }) });
const UserGrantParams = Type.Object({
  user_id: Type.String({ minLength: 1, maxLength: 100 }),
  client_id: Type.String({ minLength: 1, maxLength: 2000 }),
});

/** The integrator's view of a user's grants (HTTP Basic, the integrator family): list and withdraw. */
export function userGrantsRoutes({
  repository,
  users,
  grantWithdrawn,
}: {
  repository: AuthorizeRepository;
  users: { findById(id: string): Promise<{ project_id: string } | undefined> };
  grantWithdrawn: GrantWithdrawn;
}): FastifyPluginAsyncTypebox {
  return async (app) => {
    const ownUser = async (projectId: string, userId: string) => {
      const user = await users.findById(userId);
      if (!user || user.project_id !== projectId) throw notFound('this project has no such user');
    };
    app.get(
      '/v1/users/:user_id/grants',
      {
        schema: {
          operationId: 'listUserGrants',
          summary: 'The OAuth clients a user has allowed (consents to third-party clients)',
          tags: ['users'],
          params: UserParams,
          response: { 200: Type.Object({ grants: Type.Array(Grant) }) },
        },
      },
      async (request) => {
        await ownUser(request.project.id, request.params.user_id);
        return {
          grants: (await repository.listConsents(request.project.id, request.params.user_id)).map(toView),
        };
      },
    );
    app.delete(
      '/v1/users/:user_id/grants/:client_id',
      {
        schema: {
          operationId: 'revokeUserGrant',
          summary:
            'Withdraw a user’s grant to a client: consent is asked again, and the client’s sessions of the user end',
          tags: ['users'],
          params: UserGrantParams,
          response: { 204: NoContent },
        },
      },
      async (request, reply) => {
        const { user_id, client_id } = request.params;
        await ownUser(request.project.id, user_id);
        if (!(await repository.deleteConsent(request.project.id, user_id, client_id)))
          throw notFound('the user has not allowed this client');
        await grantWithdrawn(request.project.id, client_id, user_id, 'integrator');
        return reply.code(204).send();
      },
    );
  };
}
