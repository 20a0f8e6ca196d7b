import createClient from 'openapi-fetch';
import type { paths } from './schema.js';
const client = createClient<paths>({ baseUrl: 'http://x' });
export const wrong = client.POST('/v1/auth/otp/start', { body: { identifer: 'typo' } });
export const grant = client.POST('/oauth/token', { body: { grant_type: 'password' } });
export async function unnarrowed() {
  const done = await client.POST('/v1/auth/otp/complete', { body: { challenge_id: 'c', code: '1' } });
  return done.data?.oauth_token.access_token;
}
