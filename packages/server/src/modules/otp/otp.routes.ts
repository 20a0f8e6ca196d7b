import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { security } from '../../http/openapi.js';
import { SignInResult } from '../../http/schemas.js';
import { clientAddress, clientNetwork } from '../../net/client-network.js';
import type { AppHooks } from '../../plugins/request-context.js';
import { acceptedLanguages } from './delivery/templates/locale.js';
import type { OtpService } from './otp.service.js';

const Start = Type.Object({
  identifier: Type.String({ minLength: 1, maxLength: 320 }),
  /** A CAPTCHA response or app-attestation token for TESSERA_OTP_START_VERIFIER_URL. */
  challenge_token: Type.Optional(Type.String({ minLength: 1, maxLength: 8192 })),
  /** The language of the message (BCP 47, e.g. `fr` or `pt-BR`); else the Accept-Language header. */
  locale: Type.Optional(
    Type.String({ minLength: 2, maxLength: 35, pattern: '^[A-Za-z]{2,3}(-[A-Za-z0-9]{1,8}){0,4}$' }),
  ),
});
const Complete = Type.Object({
  challenge_id: Type.String({ minLength: 1, maxLength: 100 }),
  code: Type.String({ minLength: 1, maxLength: 32 }),
  getOAuthToken: Type.Optional(Type.Boolean()),
});
const Started = Type.Object({
  challenge_id: Type.String(),
  channel: Type.Union([Type.Literal('email'), Type.Literal('sms')]),
  expires_in: Type.Integer({ description: 'Seconds the code stays valid' }),
  resend_after: Type.Integer({ description: 'Seconds before another code may be asked for' }),
});
const tags = ['sign-in'];

export function otpRoutes({ otp, hooks }: { otp: OtpService; hooks: AppHooks }): FastifyPluginAsyncTypebox {
  return async (app) => {
    const guarded = { onRequest: hooks.ipLimit('otp'), preHandler: hooks.project };
    app.post(
      '/v1/auth/otp/start',
      {
        schema: {
          operationId: 'startOtp',
          summary: 'Send a one-time code to an e-mail address or phone number',
          tags,
          security: security('apiKey'),
          body: Start,
          response: { 200: Started },
        },
        ...guarded,
      },
      async (request) =>
        otp.start(
          request.project,
          request.body.identifier,
          clientNetwork(request.ip),
          { challengeToken: request.body.challenge_token, ip: clientAddress(request.ip) },
          [
            ...(request.body.locale ? [request.body.locale] : []),
            ...acceptedLanguages(request.headers['accept-language']),
          ],
        ),
    );
    app.post(
      '/v1/auth/otp/complete',
      {
        schema: {
          operationId: 'completeOtp',
          summary: 'Sign in with the code (a first sign-in creates the user)',
          tags,
          security: security('apiKey'),
          body: Complete,
          response: { 200: Type.Ref(SignInResult) },
        },
        ...guarded,
      },
      async (request) =>
        otp.complete(
          request.project,
          request.body.challenge_id,
          request.body.code,
          request.body.getOAuthToken === true,
          clientNetwork(request.ip),
        ),
    );
  };
}
