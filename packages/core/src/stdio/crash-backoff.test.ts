/** Crash-loop backoff on an injected clock: every wait is a clock move, nothing sleeps. */
import { describe, expect, it } from 'vitest';
import { CrashBackoff } from './crash-backoff.js';

function backoff(settings = { initialMs: 1000, maxMs: 4000, windowMs: 10_000 }) {
  const clock = { now: 1_000_000 };
  return { clock, crashes: new CrashBackoff(settings, () => clock.now) };
}

describe('CrashBackoff', () => {
  it('lets a server without crashes start', () => {
    const { crashes } = backoff();
    expect(crashes.refusal('srv_1', 'a')).toBeUndefined();
  });

  it('refuses until the wait has passed, the wait doubling with each crash in a row up to maxMs', () => {
    const { clock, crashes } = backoff();
    const waits: number[] = [];
    for (let crash = 0; crash < 5; crash++) {
      crashes.recordCrash('srv_1', 'a');
      const refused = crashes.refusal('srv_1', 'a');
      expect(refused?.code).toBe('UPSTREAM_UNREACHABLE');
      waits.push(refused?.retryAfterMs ?? 0);
      clock.now += (refused?.retryAfterMs ?? 0) - 1;
      expect(crashes.refusal('srv_1', 'a')?.retryAfterMs).toBe(1);
      clock.now += 1;
      expect(crashes.refusal('srv_1', 'a')).toBeUndefined();
    }
    expect(waits).toEqual([1000, 2000, 4000, 4000, 4000]);
  });

  it('says in the message how long to wait, and quotes nothing else', () => {
    const { clock, crashes } = backoff();
    crashes.recordCrash('srv_1', 'a');
    clock.now += 250;
    expect(crashes.refusal('srv_1', 'a')?.message).toBe('The stdio server keeps crashing; the next start is allowed in 750 ms.');
  });

  it('counts an exit inside the window as a crash, and one after it as the end of the history', () => {
    const { clock, crashes } = backoff();
    const startedAt = clock.now;
    clock.now += 9_999;
    crashes.exited('srv_1', 'a', startedAt);
    expect(crashes.refusal('srv_1', 'a')?.retryAfterMs).toBe(1000);

    clock.now += 1000;
    crashes.recordCrash('srv_1', 'a');
    const longRun = clock.now;
    clock.now += 10_000;
    crashes.exited('srv_1', 'a', longRun);
    expect(crashes.refusal('srv_1', 'a')).toBeUndefined();
    // The history is gone: the next crash waits the initial time again.
    crashes.recordCrash('srv_1', 'a');
    expect(crashes.refusal('srv_1', 'a')?.retryAfterMs).toBe(1000);
  });

  it('starts afresh for a changed configuration, after forget and after clear; servers back off apart', () => {
    const { crashes } = backoff();
    crashes.recordCrash('srv_1', 'a');
    crashes.recordCrash('srv_1', 'a');
    expect(crashes.refusal('srv_1', 'b')).toBeUndefined();
    crashes.recordCrash('srv_1', 'b');
    expect(crashes.refusal('srv_1', 'b')?.retryAfterMs).toBe(1000);

    crashes.recordCrash('srv_2', 'a');
    crashes.forget('srv_1');
    expect(crashes.refusal('srv_1', 'b')).toBeUndefined();
    expect(crashes.refusal('srv_2', 'a')?.retryAfterMs).toBe(1000);
    crashes.clear();
    expect(crashes.refusal('srv_2', 'a')).toBeUndefined();
  });
});
