import createClient from 'openapi-fetch';
import type { components, paths } from './schema.js';

type Problem = components['schemas']['Problem'];

/** OTP sign-in → dev outbox → wrong code (a typed problem) → right code → /verify → refresh. */
export async function signInAndVerify(baseUrl: string, apiKeyId: string, email: string) {
  const client = createClient<paths>({ baseUrl, headers: { API_KEY_ID: apiKeyId } });
  const started = await client.POST('/v1/auth/otp/start', { body: { identifier: email } });
  if (!started.data) throw new Error('otp/start failed');
  const channel: 'email' | 'sms' = started.data.channel;

  const outbox = await client.GET('/dev/outbox');
  const code = outbox.data?.find((m) => m.to === email)?.code;
  if (!code) throw new Error('no code in the outbox');

  const wrong = await client.POST('/v1/auth/otp/complete', {
    body: { challenge_id: started.data.challenge_id, code: code === '000000' ? '111111' : '000000' },
  });
  const problem: Problem | undefined = wrong.error;

  const done = await client.POST('/v1/auth/otp/complete', {
    body: { challenge_id: started.data.challenge_id, code, getOAuthToken: true },
  });
  const bundle = done.data?.oauth_token;
  if (!bundle) throw new Error('no token bundle');
  const method: 'OTP' | 'TRUSTED DEVICE' | 'PIN' | 'BIOMETRIC' = bundle.auth_method;

  const verified = await client.POST('/verify', {
    body: { oauth_token: { access_token: bundle.access_token } },
  });
  const success: boolean | undefined = verified.data?.success;

  const refreshed = await client.POST('/oauth/token', {
    body: { grant_type: 'refresh_token', refresh_token: bundle.refresh_token, client_id: apiKeyId },
    bodySerializer: (body) => new URLSearchParams(body as Record<string, string>).toString(),
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
  });
  const rotated: string | undefined = refreshed.data?.refresh_token;
  const oauthError: string | undefined = (
    await client.POST('/oauth/token', {
      body: { grant_type: 'refresh_token', client_id: apiKeyId },
    })
  ).error?.error;

  return { channel, problem, method, success, rotated, oldRefresh: bundle.refresh_token, oauthError };
}
