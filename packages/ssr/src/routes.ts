/** A field a route takes from the browser and passes on to Tessera, nothing else. */
type FieldType = 'string' | 'object';

export interface ProxyRoute {
  /** Tessera's path. */
  upstream: string;
  /** Fields passed on; a `?` suffix marks an optional one. */
  fields: Readonly<Record<string, FieldType>>;
  /** A `complete` call: asks for the bundle and stores it in the cookies. */
  signIn: boolean;
}

/**
 * The sign-in calls proxied to Tessera, by path under `basePath`. The browser runs the ceremony
 * (reads the code, signs the device challenge, asks the authenticator); the server adds the API key
 * id and keeps the tokens. Trusted-device and PIN sign-ins need a device key the browser registered
 * with Tessera beforehand.
 */
export const PROXY_ROUTES: Readonly<Record<string, ProxyRoute>> = {
  '/otp/start': { upstream: '/v1/auth/otp/start', fields: { identifier: 'string' }, signIn: false },
  '/otp/complete': {
    upstream: '/v1/auth/otp/complete',
    fields: { challenge_id: 'string', code: 'string' },
    signIn: true,
  },
  '/passkey/start': {
    upstream: '/v1/auth/biometric/start',
    fields: { 'identifier?': 'string' },
    signIn: false,
  },
  '/passkey/complete': {
    upstream: '/v1/auth/biometric/complete',
    fields: { challenge_id: 'string', credential: 'object' },
    signIn: true,
  },
  '/device/start': { upstream: '/v1/auth/device/start', fields: { device_id: 'string' }, signIn: false },
  '/device/complete': {
    upstream: '/v1/auth/device/complete',
    fields: { challenge_id: 'string', signature: 'string' },
    signIn: true,
  },
  '/pin/start': { upstream: '/v1/auth/pin/start', fields: { device_id: 'string' }, signIn: false },
  '/pin/complete': {
    upstream: '/v1/auth/pin/complete',
    fields: { challenge_id: 'string', signature: 'string', pin: 'string' },
    signIn: true,
  },
};

/** The declared fields of `body`, or the name of the first one missing or of the wrong type. */
export function pickFields(
  route: ProxyRoute,
  body: Record<string, unknown>,
): { ok: true; value: Record<string, unknown> } | { ok: false; field: string } {
  const value: Record<string, unknown> = {};
  for (const [declared, type] of Object.entries(route.fields)) {
    const optional = declared.endsWith('?');
    const name = optional ? declared.slice(0, -1) : declared;
    const given = body[name];
    if (given === undefined || given === '') {
      if (optional) continue;
      return { ok: false, field: name };
    }
    const matches =
      type === 'string'
        ? typeof given === 'string' && given.length <= 4096
        : typeof given === 'object' && given !== null && !Array.isArray(given);
    if (!matches) return { ok: false, field: name };
    value[name] = given;
  }
  return { ok: true, value };
}
