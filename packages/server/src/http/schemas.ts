import { type TSchema, Type } from '@sinclair/typebox';
import { ErrorCodes } from '@tessera/core';

/**
 * Schemas shared by several routes, registered once on the root (`app.addSchema`) and referred to
 * with `Type.Ref`: the OpenAPI document lists each once under `components.schemas` by its `$id`.
 * Response schemas are also what Fastify serialises with, so each must name every member the
 * routes send (an undeclared member would be dropped): the HTTP tests check that (see
 * response-contract.ts).
 */

const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()]);
const Time = Type.String({ format: 'date-time' });

/** RFC 9457 problem document with Tessera's stable `code`; extension members may follow. */
export const Problem = Type.Object(
  {
    type: Type.String({ description: 'https://tessera.dev/problems/<code>' }),
    title: Type.String(),
    status: Type.Integer(),
    code: Type.String({ enum: Object.values(ErrorCodes), description: 'Stable: switch on this' }),
    detail: Type.String({ description: 'Public text: what went wrong and what to do' }),
    retry_after: Type.Optional(Type.Integer({ description: 'Seconds to wait before trying again' })),
    attempts_left: Type.Optional(Type.Integer({ description: 'Tries left before the lock' })),
  },
  { $id: 'Problem', additionalProperties: true },
);

/** RFC 6749 §5.2 error body of the /oauth/* endpoints. */
export const OAuthErrorBody = Type.Object(
  {
    error: Type.String({ description: 'invalid_request, invalid_client, invalid_grant, …' }),
    error_description: Type.Optional(Type.String()),
  },
  { $id: 'OAuthError' },
);

/** The answer of POST /verify, whatever the outcome (malformed requests included). */
export const VerifyAnswer = Type.Object(
  {
    success: Type.Boolean(),
    reason: Type.Optional(Type.String({ description: 'Present when success is false' })),
  },
  { $id: 'VerifyAnswer' },
);

export const AuthMethod = Type.Union(
  [Type.Literal('OTP'), Type.Literal('TRUSTED DEVICE'), Type.Literal('PIN'), Type.Literal('BIOMETRIC')],
  { $id: 'AuthMethod' },
);

/** The token bundle (`oauth_token`) returned by sign-ins and by every refresh. */
export const TokenBundle = Type.Object(
  {
    access_token: Type.String(),
    id_token: Type.String(),
    refresh_token: Type.String(),
    expires_in: Type.Integer(),
    token_type: Type.Literal('Bearer'),
    auth_method: Type.Ref(AuthMethod),
  },
  { $id: 'TokenBundle' },
);

/** A sign-in completion with getOAuthToken true: the token bundle. */
export const SignInTokens = Type.Object(
  { oauth_token: Type.Ref(TokenBundle) },
  { $id: 'SignInTokens', additionalProperties: false },
);

/** A sign-in completion with getOAuthToken false: who signed in and how, no tokens. */
export const SignInUser = Type.Object(
  { user_id: Type.String(), auth_method: Type.Ref(AuthMethod) },
  { $id: 'SignInUser', additionalProperties: false },
);

/**
 * Every sign-in completion: exactly one of the two shapes, each with its members required, so a
 * generated client narrows on `oauth_token` or `user_id`.
 */
export const SignInResult = Type.Union([Type.Ref(SignInTokens), Type.Ref(SignInUser)], {
  $id: 'SignInResult',
});

/** A nonce for a device to sign: device registration, device and PIN sign-in starts. */
export const DeviceChallenge = Type.Object(
  { challenge_id: Type.String(), nonce: Type.String(), expires_in: Type.Integer() },
  { $id: 'DeviceChallenge' },
);

export const Device = Type.Object(
  { device_id: Type.String(), name: Type.String(), created_at: Time, last_used_at: Nullable(Time) },
  { $id: 'Device' },
);

export const Passkey = Type.Object(
  {
    passkey_id: Type.String(),
    name: Type.String(),
    device_type: Type.String(),
    backed_up: Type.Boolean(),
    created_at: Time,
    last_used_at: Nullable(Time),
  },
  { $id: 'Passkey' },
);

/** WebAuthn options for the browser (PublicKeyCredentialCreationOptionsJSON or …RequestOptionsJSON). */
export const PasskeyCeremony = Type.Object(
  { challenge_id: Type.String(), options: Type.Object({}, { additionalProperties: true }) },
  { $id: 'PasskeyCeremony' },
);

export const User = Type.Object(
  {
    user_id: Type.String(),
    identifier: Type.String(),
    identifier_type: Type.Union([Type.Literal('email'), Type.Literal('phone')]),
    client_user_id: Type.String({
      description: 'The id set with PATCH, else user_id: the value tokens carry (clientUserIdOf)',
    }),
    created_at: Nullable(Time),
    last_sign_in_at: Nullable(Time),
  },
  { $id: 'User' },
);

export const Session = Type.Object(
  {
    session_id: Type.String(),
    auth_method: Type.String(),
    device_id: Nullable(Type.String()),
    client_id: Nullable(
      Type.String({
        description: 'The OAuth client whose code exchange started it (null: the project’s own sign-in)',
      }),
    ),
    ip_network: Nullable(
      Type.String({
        description:
          'The network it was started from, an IPv4 /24 or IPv6 /48 (never the address); null when unknown',
      }),
    ),
    created_at: Nullable(Time),
    last_refreshed_at: Nullable(Time),
    expires_at: Nullable(Time),
    revoked_at: Nullable(Time),
  },
  { $id: 'Session' },
);

export const Webhook = Type.Object(
  {
    webhook_id: Type.String(),
    url: Type.String(),
    event_types: Type.Unsafe<readonly string[]>(Type.Array(Type.String())),
    created_at: Nullable(Time),
    last_status: Nullable(Type.String({ description: 'Outcome of the last delivery attempt' })),
    last_attempt_at: Nullable(Time),
  },
  { $id: 'Webhook' },
);

/** Custom claims of a user, merged into access tokens issued afterwards. */
export const Claims = Type.Object(
  { claims: Type.Object({}, { additionalProperties: true }) },
  { $id: 'Claims' },
);

/** Every shared schema, in the order they must be added (a schema after those it refers to). */
export const SHARED_SCHEMAS: TSchema[] = [
  Problem,
  OAuthErrorBody,
  VerifyAnswer,
  AuthMethod,
  TokenBundle,
  SignInTokens,
  SignInUser,
  SignInResult,
  DeviceChallenge,
  Device,
  Passkey,
  PasskeyCeremony,
  User,
  Session,
  Webhook,
  Claims,
];
