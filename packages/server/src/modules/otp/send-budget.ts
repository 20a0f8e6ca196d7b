import { type ErrorCode, ErrorCodes } from '@tessera/core';
import type { OtpSendingConfig } from '../../config/index.js';
import { TesseraError } from '../../errors.js';
import type { Project } from '../projects/project.js';
import type { Identifier } from './identifier.js';
import { countryAllowed, numberPrefix } from './sms-countries.js';

/** What became of an `otp/start`, as `tessera_otp_sends_total` counts it. */
export type SendOutcome =
  | 'sent'
  | 'delivery_failed'
  | 'throttled'
  | 'budget_exceeded'
  | 'prefix_throttled'
  | 'country_blocked'
  | 'verification_failed'
  | 'verification_unavailable'
  /** Anything else (e.g. the database was unavailable). */
  | 'error';

/** A start refused before anything was sent: the HTTP error and the outcome the metrics count. */
export class SendRefused extends TesseraError {
  constructor(
    readonly outcome: SendOutcome,
    statusCode: number,
    code: ErrorCode,
    detail: string,
    options: { retryAfter?: number; cause?: string } = {},
  ) {
    const { retryAfter, cause } = options;
    super(statusCode, code, detail, {
      cause,
      ...(retryAfter === undefined ? {} : { retryAfter, headers: { 'retry-after': String(retryAfter) } }),
    });
  }
}

const HOUR = 3600;
const DAY = 86_400;

export interface Counter {
  scope: string;
  subject: string;
  limit: number;
  window: number;
  outcome: SendOutcome;
  detail: string;
}

/**
 * What a project may send, whoever asks: SMS only to allowed countries, hourly and daily budgets
 * per channel, and SMS per number range per minute. These bound what SMS pumping (codes asked for
 * many numbers an attacker's carrier is paid for) can cost. The budgets count messages handed to
 * the provider, so a failed delivery is never given back: it may be billed all the same.
 */
export class SendBudget {
  constructor(private readonly rules: OtpSendingConfig) {}

  /** Refuses (403 `country_not_allowed`) an SMS to a country the project does not allow. */
  checkDestination(project: Project, identifier: Identifier): void {
    if (identifier.channel !== 'sms') return;
    const allowed = project.sms_countries ?? this.rules.smsCountries;
    if (!countryAllowed(allowed, identifier.value)) {
      throw new SendRefused(
        'country_blocked',
        403,
        ErrorCodes.countryNotAllowed,
        'sign-in codes cannot be sent by SMS to phone numbers of this country; use an e-mail address',
      );
    }
  }

  /**
   * The windows a send counts against: every budget the send falls under. They are counted with
   * the caller's own limits (`RateLimiter.hitAll`); when one is spent out, every unit taken is given
   * back (nothing is sent) and `refusal` says when to try again.
   */
  counters(project: Project, identifier: Identifier): Counter[] {
    return this.#counters(project, identifier);
  }

  /** The 429 for a spent-out budget. */
  refusal(counter: Counter, retryAfter: number): SendRefused {
    return new SendRefused(counter.outcome, 429, ErrorCodes.rateLimited, counter.detail, { retryAfter });
  }

  /**
   * The project's send budgets: each channel's hourly and daily window, with its limit (null: that
   * budget is off, `TESSERA_{SMS,EMAIL}_BUDGET_{HOURLY,DAILY}=0`) and where it is counted.
   */
  budgets(project: Project): Array<{
    channel: Identifier['channel'];
    period: 'hour' | 'day';
    limit: number | null;
    counter: Pick<Counter, 'scope' | 'subject'>;
  }> {
    return (['email', 'sms'] as const).flatMap((channel) => {
      const budget = this.rules.budgets[channel];
      const subject = `${project.id}\0${channel}`;
      return [
        {
          channel,
          period: 'hour',
          limit: budget.hourly || null,
          counter: { scope: 'otp-budget-hour', subject },
        },
        {
          channel,
          period: 'day',
          limit: budget.daily || null,
          counter: { scope: 'otp-budget-day', subject },
        },
      ] as const;
    });
  }

  #counters(project: Project, identifier: Identifier): Counter[] {
    const { channel } = identifier;
    const what = channel === 'sms' ? 'text messages' : 'e-mails';
    const counters: Counter[] = [];
    for (const budget of this.budgets(project)) {
      if (budget.channel !== channel || budget.limit === null) continue;
      counters.push({
        ...budget.counter,
        limit: budget.limit,
        window: budget.period === 'hour' ? HOUR : DAY,
        outcome: 'budget_exceeded',
        detail: `this app has sent too many sign-in ${what} ${budget.period === 'hour' ? 'this hour' : 'today'}; try again later`,
      });
    }
    if (channel === 'sms') {
      counters.push({
        scope: 'otp-sms-prefix',
        subject: `${project.id}\0${numberPrefix(identifier.value, this.rules.smsPrefixDigits)}`,
        ...this.rules.smsPrefix,
        outcome: 'prefix_throttled',
        detail: 'too many sign-in text messages to similar numbers; try again later',
      });
    }
    return counters;
  }
}
