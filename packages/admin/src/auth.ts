/**
 * How the client authenticates, one of three:
 *
 * - `{ apiKeyId, apiKeySecret }` — a project's API key (HTTP Basic): the integrator API of that project.
 * - `{ operatorToken }` — the service's `TESSERA_OPERATOR_TOKEN`: the operator API.
 * - `{ accessToken, project? }` — a console member's access token (`Authorization: Bearer`), read
 *   before every request (return a renewed one when it nears expiry), with the project to act on
 *   (`Tessera-Project: <api_key_id>`) for the integrator API; their role decides what is allowed.
 *
 * @example
 * ```ts
 * const auth: AdminAuth = { apiKeyId: 'pk_…', apiKeySecret: process.env.TESSERA_API_KEY_SECRET! };
 * ```
 */
export type AdminAuth =
  | { apiKeyId: string; apiKeySecret: string; operatorToken?: never; accessToken?: never; project?: never }
  | { operatorToken: string; apiKeyId?: never; apiKeySecret?: never; accessToken?: never; project?: never }
  | {
      accessToken: () => string | Promise<string>;
      project?: string;
      apiKeyId?: never;
      apiKeySecret?: never;
      operatorToken?: never;
    };

/** The header with the project a console member acts on. */
export const PROJECT_HEADER = 'Tessera-Project';

/** Base64 of a string's UTF-8 bytes (RFC 7617), with the `btoa` of browsers and Node alike. */
function base64(text: string): string {
  let binary = '';
  for (const byte of new TextEncoder().encode(text)) binary += String.fromCharCode(byte);
  return btoa(binary);
}

/** Checks the options once: exactly one mode, every value a non-empty string. */
export function checkAuth(auth: AdminAuth): void {
  const modes = [
    auth.apiKeyId !== undefined || auth.apiKeySecret !== undefined,
    auth.operatorToken !== undefined,
    auth.accessToken !== undefined,
  ].filter(Boolean).length;
  if (modes !== 1)
    throw new TypeError(
      '@tessera/admin: give exactly one of { apiKeyId, apiKeySecret }, { operatorToken } or { accessToken }',
    );
  const nonEmpty = (name: string, value: unknown) => {
    if (typeof value !== 'string' || value.length === 0)
      throw new TypeError(`@tessera/admin: ${name} must be a non-empty string`);
  };
  if (auth.apiKeyId !== undefined || auth.apiKeySecret !== undefined) {
    nonEmpty('apiKeyId', auth.apiKeyId);
    nonEmpty('apiKeySecret', auth.apiKeySecret);
    if (auth.apiKeyId!.includes(':')) throw new TypeError('@tessera/admin: apiKeyId cannot contain ":"');
  } else if (auth.operatorToken !== undefined) {
    nonEmpty('operatorToken', auth.operatorToken);
  } else {
    if (typeof auth.accessToken !== 'function')
      throw new TypeError('@tessera/admin: accessToken must be a function returning the token');
    if (auth.project !== undefined) nonEmpty('project', auth.project);
  }
}

/** The headers that authenticate one request. */
export async function authHeaders(auth: AdminAuth): Promise<Record<string, string>> {
  if (auth.apiKeyId !== undefined)
    return { authorization: `Basic ${base64(`${auth.apiKeyId}:${auth.apiKeySecret}`)}` };
  if (auth.operatorToken !== undefined) return { authorization: `Bearer ${auth.operatorToken}` };
  const token = await auth.accessToken!();
  if (typeof token !== 'string' || token.length === 0)
    throw new TypeError('@tessera/admin: accessToken() gave no token');
  return {
    authorization: `Bearer ${token}`,
    ...(auth.project !== undefined && { [PROJECT_HEADER.toLowerCase()]: auth.project }),
  };
}
