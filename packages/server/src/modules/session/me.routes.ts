import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { security } from '../../http/openapi.js';
import type { AppHooks } from '../../plugins/request-context.js';
import type { StepUp } from '../sign-in/step-up.js';
import type { SignOutService } from './sign-out.service.js';

const SignOut = Type.Object({
  scope: Type.Optional(Type.Union([Type.Literal('global'), Type.Literal('others')])),
  forget_devices: Type.Optional(Type.Boolean()),
});
const SignedOut = Type.Object({ sessions_revoked: Type.Integer(), devices_forgotten: Type.Integer() });

export interface MeRoutesDeps {
  signOut: SignOutService;
  stepUp: StepUp;
  hooks: AppHooks;
}

/** The signed-in user's own account: sign out everywhere (or on the other devices). */
export function meRoutes({ signOut, stepUp, hooks }: MeRoutesDeps): FastifyPluginAsyncTypebox {
  return async (app) => {
    const guarded = { onRequest: hooks.ipLimit('me'), preHandler: hooks.bearer };
    app.post(
      '/v1/me/sessions/revoke',
      {
        schema: {
          operationId: 'signOutEverywhere',
          summary: 'Sign out everywhere, or on the other devices; optionally forget the trusted devices',
          tags: ['account'],
          security: security('accessToken'),
          body: SignOut,
          response: { 200: SignedOut },
        },
        ...guarded,
      },
      async (request) => {
        const forgetDevices = request.body.forget_devices === true;
        // Forgetting devices removes credentials: not for a stolen access token alone.
        if (forgetDevices)
          await stepUp.requireRecentStrongSignIn(request.auth, 'forget your trusted devices');
        return signOut.signOut(request.auth.project, request.auth.user, {
          scope: request.body.scope ?? 'global',
          currentSessionId: request.auth.claims.sid,
          forgetDevices,
          by: 'user',
        });
      },
    );
  };
}
