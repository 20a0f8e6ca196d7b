import { TesseraVerifyError } from './errors.js';

/** Positive answers of `POST /verify` are reused for at most this long. */
export const REVOCATION_CACHE_MS = 1000;
// Bounds the memory of the cache under a flood of distinct valid tokens.
const MAX_CACHE_ENTRIES = 10_000;

// The service's fixed reasons (API.md, "Verification") that have a more precise code than invalid_token.
const REASON_CODES: Readonly<Record<string, TesseraVerifyError['code']>> = {
  'JWT token has been revoked': 'token_revoked',
  'JWT token has expired': 'token_expired',
  'JWT token was issued for another API key': 'wrong_audience',
  'JWT token was issued for another resource': 'wrong_audience',
  'JWT token was issued by another issuer': 'wrong_issuer',
};

export interface OnlineCheckOptions {
  verifyUri: URL;
  apiKeyId: string;
  /** A resource server's identifier (RFC 8707): sent as `resource`, so tokens bound to it verify. */
  resource?: string | undefined;
  fetch: typeof globalThis.fetch;
  timeout: number;
  now: () => number;
}

/** Asks the issuer whether a locally valid token is still valid; throws if it is not. */
export type OnlineCheck = (token: string, jti: string) => Promise<void>;

/**
 * Builds the online revocation check: `POST {issuer}/verify` per the Tessera contract. It fails
 * closed: any answer other than `{"success": true}` rejects the token.
 */
export function createOnlineCheck(options: OnlineCheckOptions): OnlineCheck {
  const validUntil = new Map<string, number>();

  function remember(jti: string): void {
    const now = options.now();
    if (validUntil.size >= MAX_CACHE_ENTRIES) {
      for (const [key, until] of validUntil) if (until <= now) validUntil.delete(key);
      if (validUntil.size >= MAX_CACHE_ENTRIES) validUntil.clear();
    }
    validUntil.set(jti, now + REVOCATION_CACHE_MS);
  }

  return async (token, jti) => {
    const until = validUntil.get(jti);
    if (until !== undefined && options.now() < until) return;
    validUntil.delete(jti);
    const answer = await ask(options, token);
    if (answer.success === true) {
      remember(jti);
      return;
    }
    const reason = typeof answer.reason === 'string' ? answer.reason : '';
    const code = REASON_CODES[reason] ?? 'invalid_token';
    const message = reason ? `Tessera rejected the token: ${reason}` : 'Tessera rejected the token';
    throw new TesseraVerifyError(code, message);
  };
}

interface VerifyAnswer {
  success?: unknown;
  reason?: unknown;
}

async function ask(options: OnlineCheckOptions, token: string): Promise<VerifyAnswer> {
  let response: Response;
  try {
    response = await options.fetch(options.verifyUri.href, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', API_KEY_ID: options.apiKeyId },
      body: JSON.stringify({
        oauth_token: { access_token: token },
        ...(options.resource !== undefined ? { resource: options.resource } : {}),
      }),
      redirect: 'manual',
      signal: AbortSignal.timeout(options.timeout),
    });
  } catch (cause) {
    throw unavailable('The verification service could not be reached', cause);
  }
  // 4xx answers carry {success:false, reason} too; 5xx and anything unreadable fail closed.
  if (response.status >= 500 || (response.status !== 200 && response.status < 400)) {
    await response.body?.cancel();
    throw unavailable(`The verification service answered HTTP ${response.status}`);
  }
  let answer: unknown;
  try {
    answer = await response.json();
  } catch (cause) {
    throw unavailable('The verification service gave an unreadable answer', cause);
  }
  if (
    typeof answer !== 'object' ||
    answer === null ||
    typeof (answer as VerifyAnswer).success !== 'boolean'
  ) {
    throw unavailable('The verification service gave an unreadable answer');
  }
  if (response.status !== 200 && (answer as VerifyAnswer).success) {
    throw unavailable(`The verification service answered HTTP ${response.status}`);
  }
  return answer as VerifyAnswer;
}

function unavailable(message: string, cause?: unknown): TesseraVerifyError {
  return new TesseraVerifyError('verification_unavailable', message, { cause });
}
