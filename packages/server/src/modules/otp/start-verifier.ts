import { ErrorCodes } from '@tessera/core';
import type { StartVerifierConfig } from '../../config/index.js';
import type { Channel } from './delivery/delivery.js';
import { SendRefused } from './send-budget.js';

/** What the client sent with `otp/start` and where it came from, for the verifier. */
export interface StartEvidence {
  /** The `challenge_token` of the request body (a CAPTCHA response or an app-attestation token). */
  challengeToken?: string | undefined;
  /** The client address as Tessera sees it (after TESSERA_TRUST_PROXY). */
  ip?: string | undefined;
}

/**
 * Asks the integrator's verifier whether a code may be sent: `POST <url>` with JSON
 * `{ token, channel, ip, project_id }`; an answer of `{"success": true}` lets the start go on.
 * The verifier checks the token with its CAPTCHA or attestation provider (which also makes the
 * token single-use). It fails closed: a verifier that cannot be reached or answers 5xx refuses the
 * start (503), since letting codes out unchecked is what it is there to stop.
 */
export class StartVerifier {
  constructor(private readonly config: StartVerifierConfig) {}

  /** Throws a 403 (`captcha_required`, `captcha_failed`) or a 503; returns when the start may go on. */
  async verify(projectId: string, channel: Channel, evidence: StartEvidence): Promise<void> {
    if (!this.config.channels.includes(channel)) return;
    if (!evidence.challengeToken) {
      throw new SendRefused(
        'verification_failed',
        403,
        ErrorCodes.captchaRequired,
        'this request needs a challenge_token (CAPTCHA or app attestation) before a code is sent',
      );
    }
    const verdict = await this.#ask({
      token: evidence.challengeToken,
      channel,
      ip: evidence.ip ?? null,
      project_id: projectId,
    });
    if (typeof verdict === 'object') {
      throw new SendRefused(
        'verification_unavailable',
        503,
        ErrorCodes.serviceUnavailable,
        'the sign-in check is unavailable; try again shortly',
        { retryAfter: 5, cause: verdict.unavailable },
      );
    }
    if (verdict === 'failed') {
      throw new SendRefused(
        'verification_failed',
        403,
        ErrorCodes.captchaFailed,
        'the challenge_token did not pass the check; complete the challenge again',
      );
    }
  }

  /** The verdict, or why there is none (for the log: no token, no URL). */
  async #ask(body: Record<string, string | null>): Promise<'passed' | 'failed' | { unavailable: string }> {
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (this.config.token) headers['authorization'] = `Bearer ${this.config.token}`;
    try {
      const response = await fetch(this.config.url, {
        method: 'POST',
        headers,
        body: JSON.stringify(body),
        redirect: 'manual',
        signal: AbortSignal.timeout(this.config.timeoutMs),
      });
      // 2xx and 4xx are verdicts; a 5xx or a redirect means the verifier is broken.
      if (response.status >= 500 || (response.status >= 300 && response.status < 400)) {
        await response.body?.cancel().catch(() => undefined);
        return { unavailable: `the OTP start verifier answered ${response.status}` };
      }
      const text = await response.text();
      return response.ok && successOf(text) === true ? 'passed' : 'failed';
    } catch (error) {
      const timedOut = error instanceof Error && error.name === 'TimeoutError';
      return { unavailable: `the OTP start verifier ${timedOut ? 'timed out' : 'could not be reached'}` };
    }
  }
}

function successOf(text: string): unknown {
  try {
    return (JSON.parse(text) as { success?: unknown } | null)?.success;
  } catch {
    return undefined;
  }
}
