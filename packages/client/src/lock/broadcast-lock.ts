import { type ChannelLike, instanceId, post } from '../session/channel.js';
import { lockTimeout, settlesWithin, type TokenLock } from './lock.js';

/**
 * Options of {@link broadcastChannelLock}.
 *
 * @example
 * ```ts
 * const options: BroadcastLockOptions = { channel: new BroadcastChannel('tessera'), staleMs: 5_000 };
 * ```
 */
export interface BroadcastLockOptions {
  /** The channel every participant shares (one per origin and app). */
  channel: ChannelLike;
  /** How long to wait for the lock before failing with `lock_timeout`. Default 20 s. */
  timeoutMs?: number;
  /** A holder silent this long is taken for dead (its tab closed or froze). Default 3 s. */
  staleMs?: number;
  /** How long a claim waits for objections before it counts as won. Default 50 ms. */
  settleMs?: number;
  /** A holder stops asserting the lock after this long, even if its work is not done. Default `timeoutMs`. */
  maxHoldMs?: number;
}

type LockMessage = { kind: 'tessera-lock'; name: string; from: string } & (
  | { type: 'claim'; ticket: number }
  | { type: 'held' }
  | { type: 'release' }
);

interface NameState {
  holder?: string;
  holderSeen: number;
  holding: boolean;
  claim?: { ticket: number; beaten: boolean };
  wake: Set<() => void>;
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, Math.max(0, ms)));

/**
 * A lock over a BroadcastChannel, for browsers without Web Locks. A participant claims the lock,
 * waits `settleMs` for objections (a holder answers "held"; of two simultaneous claims the lower
 * ticket wins), then holds it and repeats "held" every `staleMs / 3`. Waiters take a holder that
 * went silent for `staleMs` for dead and claim again, so a tab that dies holding the lock delays
 * the others by `staleMs`, never hangs them. Best effort: if messages were delayed beyond
 * `settleMs`, two holders are possible — the server's refresh grace window absorbs that case.
 *
 * @example
 * ```ts
 * import { broadcastChannelLock, createTesseraClient } from '@tessera/client';
 *
 * const channel = new BroadcastChannel('tessera');
 * const tessera = createTesseraClient({ issuer, apiKeyId, channel, lock: broadcastChannelLock({ channel }) });
 * ```
 */
export function broadcastChannelLock(options: BroadcastLockOptions): TokenLock & { close(): void } {
  const { channel } = options;
  const timeoutMs = options.timeoutMs ?? 20_000;
  const staleMs = options.staleMs ?? 3_000;
  const settleMs = options.settleMs ?? 50;
  const maxHoldMs = options.maxHoldMs ?? timeoutMs;
  const me = instanceId();
  const states = new Map<string, NameState>();
  const local = new Map<string, Promise<unknown>>();

  const state = (name: string): NameState => {
    let s = states.get(name);
    if (!s) {
      s = { holderSeen: 0, holding: false, wake: new Set() };
      states.set(name, s);
    }
    return s;
  };
  const send = (name: string, body: Record<string, unknown>) =>
    post(channel, { kind: 'tessera-lock', name, from: me, ...body });
  const wakeAll = (s: NameState) => {
    for (const wake of s.wake) wake();
    s.wake.clear();
  };
  const waitForNews = (s: NameState, ms: number) =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(done, Math.max(0, ms));
      function done() {
        clearTimeout(timer);
        s.wake.delete(done);
        resolve();
      }
      s.wake.add(done);
    });

  const onMessage = (event: MessageEvent) => {
    const m = event.data as LockMessage | undefined;
    if (m?.kind !== 'tessera-lock' || m.from === me || typeof m.name !== 'string') return;
    const s = state(m.name);
    if (m.type === 'claim') {
      if (s.holding) send(m.name, { type: 'held' });
      else if (s.claim && (m.ticket < s.claim.ticket || (m.ticket === s.claim.ticket && m.from < me))) {
        s.claim.beaten = true;
        s.holder = m.from;
        s.holderSeen = Date.now();
      }
    } else if (m.type === 'held') {
      s.holder = m.from;
      s.holderSeen = Date.now();
      if (s.claim) s.claim.beaten = true;
    } else if (m.type === 'release' && s.holder === m.from) {
      s.holder = undefined;
    }
    wakeAll(s);
  };
  channel.addEventListener('message', onMessage);

  /**
   * Waits for objections. A busy event loop can run the timer before messages that arrived in
   * time, so one more turn of the loop lets them in; and when the wait took far longer than
   * asked (the tab was stalled), the objections may still be on their way: wait again.
   */
  async function settle(): Promise<void> {
    for (let round = 0; round < 3; round++) {
      const started = Date.now();
      await sleep(settleMs);
      await sleep(0);
      if (Date.now() - started < settleMs * 2) return;
    }
  }

  async function acquire(name: string, deadline: number): Promise<() => void> {
    const s = state(name);
    for (;;) {
      const now = Date.now();
      if (now >= deadline) throw lockTimeout();
      if (s.holder !== undefined && now - s.holderSeen < staleMs) {
        await waitForNews(s, Math.min(staleMs - (now - s.holderSeen), deadline - now));
        continue;
      }
      s.holder = undefined;
      const claim = { ticket: Math.random(), beaten: false };
      s.claim = claim;
      send(name, { type: 'claim', ticket: claim.ticket });
      await settle();
      s.claim = undefined;
      if (claim.beaten) continue;
      return hold(name, s);
    }
  }

  function hold(name: string, s: NameState): () => void {
    s.holding = true;
    send(name, { type: 'held' });
    const started = Date.now();
    const heartbeat = setInterval(
      () => {
        if (Date.now() - started > maxHoldMs) s.holding = false;
        if (!s.holding || !send(name, { type: 'held' })) clearInterval(heartbeat);
      },
      Math.max(10, Math.floor(staleMs / 3)),
    );
    return () => {
      clearInterval(heartbeat);
      s.holding = false;
      send(name, { type: 'release' });
    };
  }

  return {
    /** Stops listening to the channel (the lock is unusable afterwards). */
    close() {
      channel.removeEventListener('message', onMessage);
    },
    run<T>(name: string, fn: () => Promise<T>): Promise<T> {
      // Callers in this tab queue locally; the channel only arbitrates between tabs.
      const deadline = Date.now() + timeoutMs;
      const previous = local.get(name) ?? Promise.resolve();
      const mine = (async () => {
        if (!(await settlesWithin(previous, timeoutMs))) throw lockTimeout();
        const release = await acquire(name, deadline);
        try {
          return await fn();
        } finally {
          release();
        }
      })();
      local.set(name, mine);
      const cleanup = () => {
        if (local.get(name) === mine) local.delete(name);
      };
      mine.then(cleanup, cleanup);
      return mine;
    },
  };
}
