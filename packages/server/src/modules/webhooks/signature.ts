import { createHmac } from 'node:crypto';

/**
 * Standard Webhooks signature: `v1,` + base64(HMAC-SHA256(secret, "<id>.<timestamp>.<body>")),
 * where the secret is the base64 part of `whsec_…`.
 */
export function signWebhook(secret: string, id: string, timestamp: number, body: string): string {
  const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64');
  return `v1,${createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest('base64')}`;
}
