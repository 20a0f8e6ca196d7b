import type { Channel } from '../otp/delivery/delivery.js';
import type { DeliveryAttempt } from '../otp/delivery/observed.js';

/** Consecutive provider failures on a channel before readiness reports it. */
export const DELIVERY_FAILURES_TO_FAIL = 3;
/** A failing channel counts as healthy again this long after its last failure (or at once on a success). */
export const DELIVERY_RECOVERY_MS = 60_000;

interface ChannelState {
  consecutiveFailures: number;
  lastFailureAt: number;
}

/**
 * This instance's own view of OTP delivery, from the attempts it made: a channel is failing after
 * DELIVERY_FAILURES_TO_FAIL provider failures in a row (a refused recipient or message does not
 * count: that is the message's fault, not the provider's), and healthy again at the next success
 * or DELIVERY_RECOVERY_MS after its last failure — an instance taken out of rotation makes no
 * attempts, so it must come back by itself and try again.
 */
export class DeliveryHealth {
  readonly #channels = new Map<Channel, ChannelState>();
  readonly #now: () => number;

  constructor(now: () => number = Date.now) {
    this.#now = now;
  }

  record(attempt: Pick<DeliveryAttempt, 'channel' | 'outcome' | 'failure'>): void {
    if (attempt.outcome === 'success') {
      this.#channels.delete(attempt.channel);
      return;
    }
    if (attempt.failure?.rejected) return;
    const state = this.#channels.get(attempt.channel) ?? { consecutiveFailures: 0, lastFailureAt: 0 };
    state.consecutiveFailures++;
    state.lastFailureAt = this.#now();
    this.#channels.set(attempt.channel, state);
  }

  /** The channels failing now, in a stable order. */
  failing(): Channel[] {
    const now = this.#now();
    const failing: Channel[] = [];
    for (const [channel, state] of this.#channels) {
      if (now - state.lastFailureAt >= DELIVERY_RECOVERY_MS) this.#channels.delete(channel);
      else if (state.consecutiveFailures >= DELIVERY_FAILURES_TO_FAIL) failing.push(channel);
    }
    return failing.sort();
  }
}
